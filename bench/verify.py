"""What the verification pipeline costs over the sandbox it drives, on all of HumanEval, in one run.

Figures (ratios first):
- pipeline_over_raw_sandbox: the pipeline's executions per second (plan, run
  every execution through `execution_run` on a thread pool, finish: what
  `manage.py verify --sync` and `manage.py humaneval_audit` do) over the raw
  sandbox engine's (`evaluation.sandbox.engine.run`, no database) on the very
  same executions: requests rebuilt from the Execution rows the pipeline
  created (`execution_request`, with the service's wall-time caps; a request
  whose cap has moved since it ran is taken from the engine's replay store by
  its digest), on the same thread count and the same warm bwrap pool.
  Goal >= 0.85.
- humaneval_verify_s: wall time to verify all 164 HumanEval tasks with the
  bwrap pool (R = 5, M = 30, every probe). Goal <= 300 s on a 2-core machine.

The database is a fresh SQLite file in a temporary directory, migrated here;
the checkout's var/ is left alone. Progress goes to stderr; the last line of
stdout is one JSON object.

Usage: .venv/bin/python bench/verify.py [--limit N] [--repeats R] [--mutants M] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRATCH = tempfile.mkdtemp(prefix="bench-verify-")
# Before Django reads its settings: a database of our own, quiet logs, nothing enqueued on submit.
os.environ["DATABASE_URL"] = f"sqlite:///{SCRATCH}/bench.sqlite3"
os.environ.setdefault("LOG_LEVEL", "WARNING")
# The pipeline as deployed: DEBUG (the embedded default) keeps a log of every SQL
# statement in memory, which no worker in production does.
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ["VERIFY_ON_SUBMIT"] = "0"
os.environ.setdefault("SANDBOX_REPLAY_DIR", str(Path(SCRATCH) / "replay"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from evaluation import audit  # noqa: E402
from evaluation.models import Execution, Verification  # noqa: E402
from evaluation.sandbox import engine, replay  # noqa: E402
from evaluation.sandbox.types import hash_seed_for  # noqa: E402
from evaluation.services import verifications_run  # noqa: E402
from evaluation.services.config import VerifyConfig  # noqa: E402
from evaluation.services.verification import execution_request  # noqa: E402

BACKEND = "bwrap"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(label: str):
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if done == total or done % 500 == 0:
            say(f"  {label}: {done}/{total} executions, {time.perf_counter() - started:.1f} s")

    return report


def raw_run(requests: list, workers: int) -> tuple[float, list[str]]:
    """Seconds to run `requests` straight through the engine on `workers` threads, and their statuses."""
    report = progress("raw engine")
    done = [0]

    def one(request) -> str:
        status = str(engine.run(request, backend=BACKEND).status)
        done[0] += 1  # only for the progress line; an off-by-one under contention is harmless
        report(done[0], len(requests))
        return status

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        statuses = list(pool.map(one, requests))
    return time.perf_counter() - started, statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="Only the first N HumanEval tasks.")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mutants", type=int, default=30)
    parser.add_argument("--workers", type=int, default=0, help="Threads (default: the pool's size, the core count).")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    config = VerifyConfig.from_settings(repeats=args.repeats, mutants=args.mutants, backend=BACKEND)
    pool = engine.get_pool(BACKEND)
    workers = args.workers or pool.size

    started = time.perf_counter()
    actor = audit.auditor_user()
    slugs = audit.dataset_import(path=audit.default_dataset(), actor=actor, limit=args.limit)
    audit.drafts_submit(slugs=slugs, actor=actor)
    versions = audit.latest_versions(slugs)
    import_s = time.perf_counter() - started
    say(f"imported and submitted {len(versions)} tasks in {import_s:.1f} s; {workers} thread(s), pool of {pool.size}")

    seeds = tuple(sorted({hash_seed_for(seed) for seed in range(config.repeats)}))
    pool.warm(hash_seeds=seeds)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    ids = verifications_run(
        versions=versions, config=config, workers=workers, progress=progress("pipeline"), timings=timings
    )
    verify_s = time.perf_counter() - started

    executions = list(
        Execution.objects.filter(verification_id__in=ids)
        .select_related("verification__version")
        .order_by("verification_id", "role", "subject", "repeat")  # the order the pipeline ran them in
    )
    requests, recorded = [], 0
    for e in executions:
        # The service's request for the row: the version's tests and limits, under the wall-time
        # cap the service puts on probes and mutants. A mutant's cap depends on the reference runs
        # finished when it ran, so where the rebuilt request is not the one that ran (its digest
        # differs), the request the engine kept under that digest is the one to run again.
        request = execution_request(e)
        if engine.request_digest(request) != e.request_digest:
            request = replay.load(e.request_digest)
            recorded += 1
        requests.append(request)
    say(f"  {len(requests) - recorded} requests rebuilt from the rows, {recorded} taken from the replay store")
    pool.warm(hash_seeds=seeds)
    raw_s, raw_statuses = raw_run(requests, workers)

    total = len(executions)
    pipeline_rate, raw_rate = total / verify_s, total / raw_s
    differ = [(e, status) for e, status in zip(executions, raw_statuses, strict=True) if e.status != status]
    for e, status in differ[:20]:  # timing-sensitive programs (near a limit) may end differently
        say(f"  differs: {e.verification.version} {e.role} {e.subject[:16]}: pipeline {e.status}, raw {status}")
    agree = total - len(differ)
    verdicts = Counter(Verification.objects.filter(pk__in=ids).values_list("verdict", flat=True))
    print(
        json.dumps(
            {
                "bench": "verify",
                "pipeline_over_raw_sandbox": round(pipeline_rate / raw_rate, 4),
                "humaneval_verify_s": round(verify_s, 2),
                "pipeline_executions_per_s": round(pipeline_rate, 2),
                "raw_executions_per_s": round(raw_rate, 2),
                "raw_sandbox_s": round(raw_s, 2),
                "plan_s": round(timings["plan_s"], 2),
                "run_s": round(timings["run_s"], 2),
                "finish_s": round(timings["finish_s"], 2),
                "import_s": round(import_s, 2),
                "status_agreement": round(agree / total, 4) if total else None,
                "requests_from_replay_store": recorded,
                "tasks": len(versions),
                "executions": total,
                "executions_by_role": dict(Counter(e.role for e in executions)),
                "verified": verdicts.get("verified", 0),
                "flagged": verdicts.get("flagged", 0),
                "repeats": config.repeats,
                "mutants": config.mutants,
                "probes": config.probes,
                "workers": workers,
                "cores": os.cpu_count(),
            }
        )
    )
    engine.close_pools()


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
