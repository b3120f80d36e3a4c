"""What one explore run (issue 22) costs and finds, beside the verdict runs it builds on.

For HumanEval tasks (the first --tasks of the data set), each with up to 30 mutants
from the mutation engine (evaluation/verification/mutants, seed 0), side by side on
one warm bwrap pool, one task at a time:

- the baseline: what verification does today for the task's mutants, one verdict run
  of the reference and one of each mutant against the task's tests;
- the platform: one explore run (200 generated inputs, 10 proposals kept) with the
  same mutants.

Figures: explore_over_verdicts (the median over tasks of one explore run's wall time
over the baseline's runs together), explore_median_s and explore_p90_s (one run's wall
time), survivors (mutants that pass the task's tests), survivors_told_apart (of those,
the ones the explore run tells apart from the reference, each with a counterexample),
killed_mutants_agree (the mutants the tests kill that explore also tells apart: should
be all of them, 1.0), incomplete (runs that hit their deadline).

Usage: .venv/bin/python bench/explore.py [--tasks N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from evaluation.sandbox import engine  # noqa: E402
from evaluation.sandbox.engine import sandbox_factory  # noqa: E402
from evaluation.sandbox.pool import SandboxPool  # noqa: E402
from evaluation.sandbox.run_requests import explore_request_for, run_request_for  # noqa: E402
from evaluation.verification.mutants import generate_mutants  # noqa: E402
from tasks_app.datasets import humaneval_path  # noqa: E402


def task_of(row: dict) -> SimpleNamespace:
    """What the request builders read of a task version."""
    return SimpleNamespace(suite_kind="check_function", entry_point=row["entry_point"], test_setup="",
                           visible_tests=[], hidden_tests=[row["test"]], time_limit_s=10.0,
                           memory_limit_mb=512)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=40)
    options = parser.parse_args()
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle][: options.tasks]
    pool = SandboxPool(sandbox_factory("bwrap"), size=1)
    ratios, walls = [], []
    survivors = told_apart = killed = agree = incomplete = 0
    try:
        for row in rows:
            task, reference = task_of(row), row["prompt"] + row["canonical_solution"]
            mutants = generate_mutants(reference, seed=0, limit=30)
            started = time.monotonic()
            verdicts = [engine.run(run_request_for(task, code), backend="bwrap", pool=pool)
                        for code in [reference, *(m.source for m in mutants)]]  # fmt: skip
            baseline = time.monotonic() - started
            request = explore_request_for(task, reference=reference, mutants=[(m.digest, m.source) for m in mutants],
                                          seed=1, inputs=200, keep=10)  # fmt: skip
            started = time.monotonic()
            explored = engine.run(request, backend="bwrap", pool=pool)
            wall = time.monotonic() - started
            ratios.append(wall / baseline)
            walls.append(wall)
            data = explored.data or {"mutants": {}, "complete": False}
            incomplete += not data["complete"]
            for mutant, verdict in zip(mutants, verdicts[1:], strict=True):
                differs = data["mutants"].get(mutant.digest, {}).get("outcome") == "differs"
                if verdict.passed:
                    survivors += 1
                    told_apart += differs
                else:
                    killed += 1
                    agree += differs
    finally:
        pool.close()
    walls.sort()
    print(json.dumps({
        "bench": "explore",
        "explore_over_verdicts": round(statistics.median(ratios), 3),
        "survivors_told_apart": told_apart,
        "survivors": survivors,
        "killed_mutants_agree": round(agree / killed, 4) if killed else None,
        "explore_median_s": round(statistics.median(walls), 3),
        "explore_p90_s": round(walls[int(0.9 * (len(walls) - 1))], 3),
        "incomplete": incomplete,
        "tasks": len(rows),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
