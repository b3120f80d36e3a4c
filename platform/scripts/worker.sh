#!/usr/bin/env bash
# The Celery worker `make run` starts (run.sh), on the embedded defaults: every queue
# (planning, the sandbox runs, and the reward chunks, which the filesystem broker keeps
# apart: settings.REWARD_QUEUE) with the periodic reapers (-B). bench/verify.py and
# tests/evaluation/test_embedded_pipeline.py start this very script, so what they
# measure and check is what `make run` runs. Extra arguments go to the worker.
#
# Why so (docs/deployment.md, "The embedded worker"): one process with two task threads
# sharing one warm sandbox pool of a slot per core, as a sandbox worker is best run
# (docs/rewards.md); a verification's executions arrive in chunks that run side by side
# on that pool, no more at once than it has slots; and the filesystem broker is looked
# at every CELERY_FILESYSTEM_POLL_MS (settings.py), not every second.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
exec "$VENV/bin/celery" -A config worker -Q celery,sandbox,rewards -B \
  --schedule "${PLATFORM_VAR_DIR:-$ROOT/var}/celerybeat-schedule" --pool threads --concurrency=2 --loglevel=INFO "$@"
