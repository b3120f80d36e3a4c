#!/usr/bin/env bash
# Make sure the Docker engine answers (installing docker.io, debootstrap and bubblewrap
# with apt and starting dockerd without a bridge where needed; where it already runs,
# use it as it is), then build the sandbox image offline unless it is up to date.
# Prints nothing on stdout but, as its last line, the sandbox image's ID.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

ensure_docker
bash "$ROOT/platform/sandbox/build-offline.sh"
