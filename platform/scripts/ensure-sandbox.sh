#!/usr/bin/env bash
# `make run`'s sandbox step: make sure the configured backend (SANDBOX_BACKEND, bwrap by
# default) can run verifications here before anything is served. Installs what it needs
# where it may (root, apt-get, PLATFORM_INSTALL not 0), then starts one real sandbox
# through the platform (manage.py sandbox_check) and runs a correct solution in it.
# Otherwise it stops with one message: the missing packages and the command that
# installs them, or why the backend does not work. A platform whose every verdict would
# be sandbox_error is not served. Needs the virtualenv (run.sh makes it first).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

BACKEND="${SANDBOX_BACKEND:-bwrap}"
NOT_SERVED="make run does not serve a platform whose every verification would end as sandbox_error"

# bwrap_packages: the Debian packages the bwrap backend needs that are missing, found the
# way the platform looks for them: bwrap on the PATH (shutil.which), the sandbox's
# interpreter at SANDBOX_PYTHON (default Debian's /usr/bin/python3) with pytest.
bwrap_packages() {
  command -v bwrap >/dev/null || echo bubblewrap
  if [ -n "${SANDBOX_PYTHON:-}" ]; then
    return 0  # an interpreter of the user's choosing: the check below tells whether it works
  fi
  if [ ! -x /usr/bin/python3 ]; then
    echo python3 python3-pytest
  elif ! /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; then
    echo python3-pytest
  fi
}

# sandbox_problem: runs one sandbox through the platform; prints why it failed, if it did.
sandbox_problem() {
  local out
  [ -x "$PY" ] || { echo "$PY is missing: create the virtualenv first (make run does)"; return 0; }
  if out="$("$PY" manage.py sandbox_check --backend "$BACKEND" 2>&1)"; then
    return 0
  fi
  printf '%s\n' "$out" | sed -n 's/^CommandError: //p' | tail -n 1 | grep . || printf '%s\n' "$out" | tail -n 1
}

ensure_bwrap_backend() {
  local missing why
  if [ -n "${SANDBOX_PYTHON:-}" ] && [ ! -x "$SANDBOX_PYTHON" ]; then
    die "SANDBOX_PYTHON=$SANDBOX_PYTHON is not an executable interpreter: unset it to use Debian's /usr/bin/python3 ($NOT_SERVED)"
  fi
  missing="$(bwrap_packages | xargs)"
  if [ -n "$missing" ]; then
    # shellcheck disable=SC2086 # a list of package names
    why="$(why_no_install)" || die "the bwrap sandbox needs Debian packages that are missing: $missing;" \
      "make run cannot install them ($why): run \`$(install_command $missing)\`, then make run again" \
      "($NOT_SERVED; or set SANDBOX_BACKEND=docker with a Docker engine and the sandbox image: make sandbox-image)"
    # shellcheck disable=SC2086
    apt_get_install $missing
    hash -r
    missing="$(bwrap_packages | xargs)"
    [ -z "$missing" ] || die "apt-get installed them, but still missing: $missing (bwrap on PATH=$PATH, /usr/bin/python3 with pytest)"
  fi
}

# ensure_toolchains: the compilers and runtimes of the other languages a task may be written
# in (evaluation/sandbox/languages.py; the sample catalogue has a task in each). Installed
# where make run may install; otherwise a warning, not a stop: Python tasks verify
# without them, and a task in a missing language ends as sandbox_error naming its packages.
ensure_toolchains() {
  local missing=() why pkg
  for pkg in $("$PY" -m evaluation.sandbox.languages packages); do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! why="$(why_no_install)"; then
    say "warning: the toolchains of ${#missing[@]} package(s) are missing (${missing[*]}) and make run cannot" \
      "install them ($why): tasks in those languages will end as sandbox_error until" \
      "\`$(install_command "${missing[@]}")\` is run"
    return 0
  fi
  say "installing the language toolchains: ${missing[*]}"
  apt_get_install "${missing[@]}"
}

ensure_docker_backend() {
  local problem why
  problem="$(sandbox_problem)"
  [ -n "$problem" ] || return 0
  # The engine, started without a bridge, and the sandbox image, as make sandbox-image does.
  why="$(why_no_install)" || die "SANDBOX_BACKEND=docker needs a Docker engine that answers and the sandbox image" \
    "${SANDBOX_DOCKER_IMAGE:-taskplatform-sandbox:latest}: $problem; make run cannot set them up ($why):" \
    "run \`sudo make sandbox-image\`, then make run again ($NOT_SERVED; or unset SANDBOX_BACKEND for bubblewrap)"
  say "SANDBOX_BACKEND=docker: $problem; setting up the engine and the sandbox image"
  "$ROOT/platform/scripts/ensure-docker.sh" >/dev/null
}

case "$BACKEND" in
  bwrap) ensure_bwrap_backend; ensure_toolchains ;;
  docker) ensure_docker_backend ;;
  *) die "SANDBOX_BACKEND=$BACKEND: use bwrap (the default) or docker" ;;
esac

say "checking that a $BACKEND sandbox runs a verification"
problem="$(sandbox_problem)"
[ -z "$problem" ] || die "$problem ($NOT_SERVED)"
say "the $BACKEND sandbox works"
