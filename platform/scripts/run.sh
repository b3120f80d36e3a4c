#!/usr/bin/env bash
# `make run`: set up and start the platform on its embedded defaults (SQLite and a
# filesystem Celery broker under var/, the bubblewrap sandbox), with the sample
# catalogue and demo users.
# Starts the web server on 127.0.0.1:8000 and a Celery worker; Ctrl-C stops both.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"

ensure_venv requirements.txt
# Before anything is served: the sandbox backend installed (bubblewrap, the sandbox's
# python3 with pytest) and one real sandbox run through it, or one message saying what
# to install; never a platform whose every verdict would be sandbox_error.
"$ROOT/platform/scripts/ensure-sandbox.sh"
say "migrating"
"$PY" manage.py migrate --noinput
say "loading the sample catalogue and demo users"
"$PY" manage.py seed_demo

pids=()
stop() {
  trap - INT TERM EXIT
  say "stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
# Ctrl-C is how a user stops the platform: a clean exit. A crash of either
# process still exits non-zero, through the EXIT trap after `wait -n`.
trap 'stop; exit 0' INT TERM
trap stop EXIT

# One worker for every queue with the periodic reapers: worker.sh says how, and why.
bash "$ROOT/platform/scripts/worker.sh" &
pids+=($!)
"$PY" manage.py runserver --noreload "$HOST:$PORT" &
pids+=($!)
say "platform on http://$HOST:$PORT/ (API docs: /api/v1/docs/); Ctrl-C stops it"
# Exit as soon as either process dies, so a crash is not hidden behind the other.
wait -n "${pids[@]}"
