#!/usr/bin/env bash
# `make test`: install the dev dependencies, make sure PostgreSQL and Redis run,
# lint with ruff, then run the whole pytest suite against them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

ensure_venv requirements-dev.txt
# The UI's real-browser tests drive Debian's headless Chromium; the sandbox tests
# need bubblewrap and the sandbox's own interpreter (Debian's python3 with pytest).
apt_install chromium fonts-dejavu-core bubblewrap python3 python3-pytest
# The toolchains of every language a solution may be written in (evaluation/sandbox/languages.py).
# shellcheck disable=SC2046
apt_install $("$PY" -m evaluation.sandbox.languages packages)
DATABASE_URL="$("$ROOT/platform/scripts/ensure-services.sh")"
# The Docker backend's tests need a running engine (no bridge) and the sandbox image.
"$ROOT/platform/scripts/ensure-docker.sh" >/dev/null
export DATABASE_URL
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
# Every component is installed above: a missing one must fail its tests, never skip them.
unset SECRET_KEY DJANGO_DEBUG TEST_ALLOW_MISSING

say "ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .

say "import contract (pyproject.toml [tool.importlinter])"
"$VENV/bin/lint-imports" --no-cache

say "pytest (database: ${DATABASE_URL%%@*}@…)"
exec "$VENV/bin/pytest" "$@"
