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
- embedded_pipeline_over_sync: the embedded pipeline's executions per second
  (`make run`'s own Celery worker, platform/scripts/worker.sh, on the filesystem
  broker and the SQLite file under a var/ of its own; every version sent through
  `verify_version` as "Verify again" sends it, timed from the first message to
  the last verification finished) over `verify --sync`'s (`verifications_run` in
  this process on the pool's thread count) on the same tasks, in rounds that
  alternate which goes first (a shared machine's speed drifts). Goal >= 0.8.
  Beside it: each side's executions per second and the sandbox queue's messages.

The database is a fresh SQLite file in a temporary var/ (PLATFORM_VAR_DIR, with
the filesystem broker's folders: the embedded defaults), migrated here; the
checkout's var/ is left alone. Progress goes to stderr; the last line of stdout
is one JSON object.

--dataset catalogue takes the sample catalogue that `make run` loads (29 tasks
that are not retired) instead of HumanEval; a path takes a HumanEval-style JSONL
(.gz) file. --embedded-rounds 0 leaves the embedded figure out, --no-raw the raw one.

Usage: .venv/bin/python bench/verify.py [--dataset humaneval|catalogue|PATH] [--limit N] [--repeats R]
           [--mutants M] [--workers N] [--embedded-rounds N] [--no-raw]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRATCH = tempfile.mkdtemp(prefix="bench-verify-")
VAR_DIR = Path(SCRATCH) / "var"
# Before Django reads its settings: the embedded defaults (SQLite and the filesystem
# broker) in a var/ of our own, quiet logs, nothing enqueued on submit.
os.environ["PLATFORM_VAR_DIR"] = str(VAR_DIR)
for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
    os.environ.pop(name, None)
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

from evaluation.models import Execution, Verification  # noqa: E402
from evaluation.sandbox import engine, replay  # noqa: E402
from evaluation.sandbox.types import hash_seed_for  # noqa: E402
from evaluation.verification import audit  # noqa: E402
from evaluation.verification.config import VerifyConfig  # noqa: E402
from evaluation.verification.executions import execution_request  # noqa: E402
from evaluation.verification.inline import verifications_run  # noqa: E402

BACKEND = "bwrap"
WORKER_SCRIPT = ROOT / "platform" / "scripts" / "worker.sh"  # the worker `make run` starts
SANDBOX_TASKS = ("run_execution", "run_executions")  # the verification tasks of the sandbox queue


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


def load_tasks(dataset: str, limit: int | None) -> list:
    """Import and submit the tasks to verify; their latest versions, in a stable order."""
    actor = audit.auditor_user()
    if dataset == "catalogue":
        from tasks_app.catalogue.demo import demo_seed
        from tasks_app.catalogue.entries import catalogue_entries

        demo_seed()  # as `make run` loads it (seed_demo), with VERIFY_ON_SUBMIT off: nothing is enqueued
        slugs = [entry.slug for entry in catalogue_entries()][:limit]
        return audit.latest_versions(slugs)
    path = audit.default_dataset() if dataset == "humaneval" else Path(dataset)
    if not path.is_file():
        raise SystemExit(f"--dataset {dataset}: no such file {path}")
    slugs = audit.dataset_import(path=path, actor=actor, limit=limit)
    audit.drafts_submit(slugs=slugs, actor=actor)
    return audit.latest_versions(slugs)


class EmbeddedWorker:
    """`make run`'s Celery worker (platform/scripts/worker.sh), in a session of its own
    (stopping it signals its process group only), logging to a file in the scratch
    folder, on this process's environment: the same var/, database and settings."""

    def __init__(self, env: dict[str, str]) -> None:
        self.log_path = Path(SCRATCH) / "worker.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(["bash", str(WORKER_SCRIPT)], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def check(self) -> None:
        if self.process.poll() is not None:
            raise SystemExit(f"the embedded worker exited with {self.process.returncode}:\n{self.log()[-3000:]}")

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.log():
            self.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"the embedded worker was not ready within {timeout:.0f} s:\n{self.log()[-3000:]}")
            time.sleep(0.2)

    def sandbox_messages(self) -> int:
        """Messages of the sandbox queue's verification tasks it has received so far."""
        return sum(
            1
            for line in self.log().splitlines()
            if line.endswith("received") and any(f"evaluation.{name}[" in line for name in SANDBOX_TASKS)
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def embedded_verify(worker: EmbeddedWorker, versions: list, ids: list[int], timeout: float) -> float:
    """Seconds from sending every version to the worker ("Verify again": verify_version,
    force) to the last of their verifications finished, by the rows' own clock."""
    from django.db.models import Max
    from django.utils import timezone

    from evaluation.tasks import verify_version

    started = timezone.now()
    for version in versions:
        verify_version.delay(version.pk, force=True)
    deadline = time.monotonic() + timeout
    rows = Verification.objects.filter(pk__in=ids)
    finished = rows.filter(finished_at__gte=started, state="done")
    while (count := finished.count()) < len(ids):
        worker.check()
        if time.monotonic() > deadline:
            states = Counter(rows.values_list("state", flat=True))
            raise SystemExit(f"the embedded pipeline finished {count} of {len(ids)} within {timeout:.0f} s: {states}")
        time.sleep(0.25)
    if rows.count() != len(ids) or Verification.objects.count() != len(ids):
        raise SystemExit("the embedded worker planned verifications of its own: its configuration is not the bench's")
    return (finished.aggregate(last=Max("finished_at"))["last"] - started).total_seconds()


def sync_verify(versions: list, config: VerifyConfig, workers: int) -> float:
    """Seconds `verify --sync --force` takes here on the same versions (verifications_run)."""
    started = time.perf_counter()
    verifications_run(versions=versions, config=config, workers=workers, force=True)
    return time.perf_counter() - started


def embedded_over_sync(versions: list, ids: list[int], config: VerifyConfig, workers: int, rounds: int) -> dict:
    """The embedded pipeline against `verify --sync` on the same verifications, in
    `rounds` rounds that alternate which goes first. The worker is started once, and
    is ready before the first message."""
    total = Execution.objects.filter(verification_id__in=ids).count()
    env = {**os.environ, "VERIFY_REPEATS": str(config.repeats), "VERIFY_MUTANTS": str(config.mutants),
           "SANDBOX_BACKEND": config.backend}  # fmt: skip
    worker = EmbeddedWorker(env)
    embedded, sync, messages = [], [], []
    try:
        worker.wait_ready()
        for round_ in range(rounds):
            for side in ("embedded", "sync") if round_ % 2 == 0 else ("sync", "embedded"):
                if side == "embedded":
                    before = worker.sandbox_messages()
                    embedded.append(embedded_verify(worker, versions, ids, timeout=max(600.0, total)))
                    messages.append(worker.sandbox_messages() - before)
                    took = embedded[-1]
                else:
                    sync.append(took := sync_verify(versions, config, workers))
                say(f"  round {round_ + 1}, {side}: {total} executions in {took:.1f} s")
    finally:
        worker.stop()
    return {
        "embedded_pipeline_over_sync": round(sum(sync) / sum(embedded), 4),
        "embedded_executions_per_s": round(total * rounds / sum(embedded), 2),
        "sync_executions_per_s": round(total * rounds / sum(sync), 2),
        "embedded_over_sync_by_round": [round(s / e, 4) for e, s in zip(embedded, sync, strict=True)],
        "embedded_s": [round(e, 2) for e in embedded],
        "sync_s": [round(s, 2) for s in sync],
        "embedded_sandbox_messages_per_round": messages,
        "embedded_worker": " ".join(WORKER_SCRIPT.read_text().split("exec ", 1)[1].split()).replace("\\ ", ""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="humaneval", help="humaneval, catalogue, or a HumanEval-style JSONL.")
    parser.add_argument("--limit", type=int, help="Only the first N tasks.")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mutants", type=int, default=30)
    parser.add_argument("--workers", type=int, default=0, help="Threads (default: the pool's size, the core count).")
    parser.add_argument("--embedded-rounds", type=int, default=1,
                        help="Rounds of the embedded pipeline against verify --sync (0: no such figure).")  # fmt: skip
    parser.add_argument("--no-raw", action="store_true", help="Leave out the raw engine (pipeline_over_raw_sandbox).")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.embedded_rounds < 0:
        parser.error("--embedded-rounds must be 0 or more")

    call_command("migrate", verbosity=0)
    config = VerifyConfig.from_settings(repeats=args.repeats, mutants=args.mutants, backend=BACKEND)
    pool = engine.get_pool(BACKEND)
    workers = args.workers or pool.size

    started = time.perf_counter()
    versions = load_tasks(args.dataset, args.limit)
    if not versions:
        raise SystemExit(f"--dataset {args.dataset}: no task to verify")
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
    total = len(executions)
    pipeline_rate = total / verify_s
    verdicts = Counter(Verification.objects.filter(pk__in=ids).values_list("verdict", flat=True))
    figures: dict = {"bench": "verify"}
    if not args.no_raw:
        figures.update(raw_figures(executions, workers, seeds, pipeline_rate))
    if args.embedded_rounds:
        say(f"the embedded pipeline (make run's worker) against verify --sync, {args.embedded_rounds} round(s)")
        figures.update(embedded_over_sync(versions, ids, config, workers, args.embedded_rounds))
    figures.update(
        {
            "humaneval_verify_s" if args.dataset == "humaneval" else "verify_s": round(verify_s, 2),
            "pipeline_executions_per_s": round(pipeline_rate, 2),
            "plan_s": round(timings["plan_s"], 2),
            "run_s": round(timings["run_s"], 2),
            "finish_s": round(timings["finish_s"], 2),
            "import_s": round(import_s, 2),
            "dataset": args.dataset,
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
    print(json.dumps(figures))
    engine.close_pools()


def raw_figures(executions: list, workers: int, seeds: tuple, pipeline_rate: float) -> dict:
    """The same executions straight through the engine: pipeline_over_raw_sandbox."""
    pool = engine.get_pool(BACKEND)
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
    raw_rate = total / raw_s
    differ = [(e, status) for e, status in zip(executions, raw_statuses, strict=True) if e.status != status]
    for e, status in differ[:20]:  # timing-sensitive programs (near a limit) may end differently
        say(f"  differs: {e.verification.version} {e.role} {e.subject[:16]}: pipeline {e.status}, raw {status}")
    return {
        "pipeline_over_raw_sandbox": round(pipeline_rate / raw_rate, 4),
        "raw_executions_per_s": round(raw_rate, 2),
        "raw_sandbox_s": round(raw_s, 2),
        "status_agreement": round((total - len(differ)) / total, 4) if total else None,
        "requests_from_replay_store": recorded,
    }


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
