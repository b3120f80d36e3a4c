#!/usr/bin/env bash
# `make train-demo`: run the bundled trainer against a running `make run` (start that
# first, in another terminal). A few steps of the replay policy (the tasks' reference
# solutions: every reward should be 1), then a few of a tiny model made here from the
# snapshot's text, guided by the references; then both again as agentic episodes on the
# repository tasks. Every run registers a job, whose curves show at
# PLATFORM_URL/jobs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

URL="${PLATFORM_URL:-http://127.0.0.1:8000}"
URL="${URL%/}"
OUT="$ROOT/var/train-demo"

# Before installing the trainer's set (torch: minutes on a fresh machine), make sure there is
# a platform to train against. The login page answers anonymous GETs on every install.
ensure_python
python3 - "$URL/accounts/login/" 2>/dev/null <<'EOF' \
  || die "the platform does not answer at $URL: start it with \`make run\` first (in another terminal)"
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=5).read()
EOF
ensure_venv requirements-train.txt

# The setup writes to this checkout's database, which is the one `make run` serves.
say "preparing the demo pool, its snapshot and a token (waits for the worker's verifications)"
setup="$("$PY" manage.py train_demo_setup)" || die "the demo setup failed (see above)"
printf '%s\n' "$setup" | sed '$d' >&2
read -r TOKEN SNAPSHOT < <(printf '%s\n' "$setup" | tail -n 1 \
  | "$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["token"], d["snapshot"])')
# A token the server does not know means PLATFORM_URL serves another database than this checkout's.
"$PY" - "$URL/api/v1/jobs" "$TOKEN" 2>/dev/null <<'EOF' \
  || die "$URL does not know the token just made: is it the \`make run\` of this checkout ($ROOT)?"
import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers={"Authorization": f"Bearer {sys.argv[2]}"}),
                       timeout=10).read()
EOF

# train NAME OUTPUT FLAGS...: a fresh output folder per run (a stale one would be resumed
# or refused); the trainer's last stdout line is its summary, whose `job` is kept.
JOBS=()
train() {
  local name="$1" out="$2" log
  shift 2
  rm -rf "$out"
  mkdir -p "$out"
  log="$out.log"
  say "training: $name"
  "$PY" -m trainer_bridge.train --server "$URL" --token "$TOKEN" --snapshot "$SNAPSHOT" --job-name "$name" \
    --output "$out" "$@" | tee "$log" || die "the $name run failed (see above)"
  JOBS+=("$(tail -n 1 "$log" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["job"])')")
}

train demo-replay "$OUT/replay" --policy replay --replay-mix reference=1 \
  --train-steps 3 --batch-size 2 --group-size 2

say "making a tiny model from the snapshot's text"
rm -rf "$OUT/tiny"
"$PY" -m trainer_bridge.trainer.tiny --out "$OUT/tiny" --export "$OUT/replay/snapshot.jsonl" >&2 \
  || die "could not make the tiny model"

# A random tiny model never passes on its own, so every group would be uniform and nothing
# learned: guidance shows it the reference in half its episodes, and its loss and KL move.
train demo-tiny "$OUT/tiny-run" --policy model --model "$OUT/tiny" --guide-share 0.5 \
  --train-steps 4 --batch-size 2 --group-size 4 --max-steps 2 --max-new-tokens 160 --learning-rate 0.003 \
  --kl-weight 0.02

# Agent sessions: the catalogue's repository tasks in a pool of their own, the replay policy
# playing each reference patch as an agent would (write it, git apply, run the tests, submit)
# in sessions forked from one set-up session per task: every reward should be 1.
say "preparing the agentic demo pool (repository tasks, run as agent sessions)"
setup="$("$PY" manage.py train_demo_setup --agentic)" || die "the agentic demo setup failed (see above)"
printf '%s\n' "$setup" | sed '$d' >&2
read -r TOKEN SNAPSHOT < <(printf '%s\n' "$setup" | tail -n 1 \
  | "$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["token"], d["snapshot"])')
train demo-agentic-replay "$OUT/agentic" --policy replay --replay-mix reference=1 \
  --train-steps 2 --batch-size 2 --group-size 2 --agent-steps 6

# The tiny model plays the same loop: its tool calls are parsed and run in forked sessions and
# its episodes judged by submit (a random model earns 0; the transcripts show what it tried).
train demo-agentic-tiny "$OUT/agentic-tiny" --policy model --model "$OUT/tiny" \
  --train-steps 1 --batch-size 2 --group-size 2 --agent-steps 2 --max-new-tokens 48 --max-prompt-tokens 600

say "done: the jobs' pages are at $URL/jobs/ (sign in as trainer / trainer-demo, or as a curator)"
for job in "${JOBS[@]}"; do say "  $URL/jobs/$job/"; done
