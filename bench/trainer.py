"""How much of a training step waits for rewards, with the rewards of a turn sent
together (concurrent batches) or one completion after another.

Figures:
- reward_wait_fraction_concurrent / _sequential: the share of a training step's
  wall time spent blocked on the reward API, with the tiny model on the CPU
  (multi-turn episodes, batch x group completions a turn, sampled
  GENERATION_BATCH at a time), over real HTTP to gunicorn and a real Celery
  worker running real bwrap sandboxes. Concurrent: each sampled chunk goes to
  the API at once, in the background, and is scored while the next is sampled;
  sequential: after each chunk, its completions are scored one after another.
  Sampling is the same in both (same seed, same chunks).
- concurrent_over_sequential: the first over the second (goal <= 0.3).
- step_s_*: mean wall time of a step; reward_wait_s_*: mean wait a step.

Side by side, after a warm-up step: each round trains STEPS steps both ways
(same seed: the same completions), the first mode alternating, so a machine
that slows down weighs on both alike. The tasks are the first TASKS of HumanEval, approved
into a snapshot; the tiny model is made from their prompts. The database is a
throwaway PostgreSQL database and the broker Redis database 7, emptied before
and after. Progress goes to stderr; the last line of stdout is one JSON object.

Usage: .venv/bin/python bench/trainer.py [--rounds R] [--steps S] [--tasks N] [--batch B] [--group G]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from stack import ROOT, in_throwaway_database, platform_env, say, server_url, start_platform

sys.path.insert(0, str(ROOT))
SCRATCH = Path(tempfile.mkdtemp(prefix="bench-trainer-"))
DB_NAME = f"bench_trainer_{os.getpid()}"
REDIS_URL = "redis://127.0.0.1:6379/7"
BASE_URL = os.environ.get("DATABASE_URL") or server_url()
os.environ.update(platform_env(BASE_URL.rsplit("/", 1)[0] + f"/{DB_NAME}", REDIS_URL, SCRATCH))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="training steps a round and mode")
    parser.add_argument("--tasks", type=int, default=24, help="HumanEval tasks in the snapshot")
    parser.add_argument("--batch", type=int, default=4, help="tasks a step")
    parser.add_argument("--group", type=int, default=4, help="episodes a task (G)")
    parser.add_argument("--max-steps", type=int, default=2, help="turns an episode")
    parser.add_argument("--generation-batch", type=int, default=4, help="completions sampled together")
    args = parser.parse_args()

    figures = in_throwaway_database(BASE_URL, DB_NAME, REDIS_URL, lambda processes: run(args, processes))
    print(json.dumps(figures))


def catalogue(limit: int) -> tuple[object, str]:
    """HumanEval's first `limit` tasks, approved and frozen: (the curator, the snapshot hash)."""
    from evaluation.verification import audit
    from tasks_app.models import State, Task
    from trainer_bridge.services.pools import pool_create, snapshot_create

    actor = audit.auditor_user()
    versions = audit.latest_versions(audit.dataset_import(path=audit.default_dataset(), actor=actor, limit=limit))
    for version in versions:  # approval is a reviewer's click; here it is the bench's setup
        Task.objects.filter(pk=version.task_id).update(state=State.APPROVED, approved_version=version)
    snapshot, _ = snapshot_create(pool=pool_create(slug="bench", title="Bench", criteria={}))
    return actor, snapshot.hash


def run(args: argparse.Namespace, processes: list[subprocess.Popen]) -> dict:
    from tasks_app.services import api_token_create
    from trainer_bridge import train
    from trainer_bridge.trainer.data import read_export
    from trainer_bridge.trainer.tiny import make_tiny_model

    say(f"importing {args.tasks} HumanEval tasks (logs under {SCRATCH})")
    actor, digest = catalogue(args.tasks)
    base = start_platform(processes, SCRATCH, name="bench-trainer", web_threads=16)
    token = api_token_create(user=actor, name="bench", scopes=["read", "write", "export", "reward"]).secret

    from trainer_bridge.client import PlatformClient

    export = PlatformClient(base, token).export(pool="bench", snapshot=digest, path=SCRATCH / "snapshot.jsonl")
    texts = [m["content"] for task in read_export(export) for m in task.prompt]
    model = make_tiny_model(texts, SCRATCH / "tiny", vocab_size=512, hidden_size=64, layers=2, heads=4, context=1024)
    say(f"tiny model at {model}")

    def one(mode: str, round_: int, steps: int = args.steps) -> list[dict]:
        out = SCRATCH / f"{mode}-{round_}"
        flags = ["--server", base, "--token", token, "--snapshot", digest, "--model", str(model), "--output", str(out),
                 "--train-steps", str(steps), "--batch-size", str(args.batch), "--group-size", str(args.group),
                 "--max-steps", str(args.max_steps), "--generation-batch", str(args.generation_batch),
                 "--max-new-tokens", "48", "--max-prompt-tokens", "900",
                 "--seed", str(round_ + 1), "--resample-rounds", "0", "--no-post-metrics",
                 "--concurrent-rewards" if mode == "concurrent" else "--no-concurrent-rewards"]  # fmt: skip
        if train.main(flags) != 0:
            raise SystemExit(f"the {mode} run of round {round_} failed")
        return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]

    say("warming up: torch, the tokenizer, the worker's sandboxes")
    one("concurrent", -1, steps=1)
    rows: dict[str, list[dict]] = {"concurrent": [], "sequential": []}
    for round_ in range(args.rounds):
        # Each mode goes first in every other round: neither always meets a colder machine.
        for mode in ("concurrent", "sequential") if round_ % 2 == 0 else ("sequential", "concurrent"):
            got = one(mode, round_)
            rows[mode] += got
            fraction = sum(r["reward_wait_s"] for r in got) / sum(r["step_s"] for r in got)
            say(f"round {round_ + 1} {mode}: reward wait {100 * fraction:.1f}% of "
                f"{statistics.fmean(r['step_s'] for r in got):.2f} s a step")  # fmt: skip

    def fraction(mode: str) -> float:
        return sum(r["reward_wait_s"] for r in rows[mode]) / sum(r["step_s"] for r in rows[mode])

    figures = {
        "tasks": args.tasks,
        "steps": args.steps * args.rounds,
        "completions_a_turn": args.batch * args.group,
        "max_steps": args.max_steps,
        "model": "tiny (random init, CPU)",
    }
    for mode in rows:
        figures[f"step_s_{mode}"] = round(statistics.fmean(r["step_s"] for r in rows[mode]), 3)
        figures[f"reward_wait_s_{mode}"] = round(statistics.fmean(r["reward_wait_s"] for r in rows[mode]), 3)
        figures[f"reward_wait_fraction_{mode}"] = round(fraction(mode), 4)
    figures["concurrent_over_sequential"] = round(fraction("concurrent") / fraction("sequential"), 4)
    return figures


if __name__ == "__main__":
    main()
