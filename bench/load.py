"""The platform under load: the reward API from many clients at once, then a verification
backlog on two sandbox workers, in one run against real processes.

1. Rewards: CLIENTS threads, each with its own `trainer_bridge.client.PlatformClient`
   (its own session), post REQUESTS completions in batches of BATCH over real HTTP to
   gunicorn (gthread), scored by two Celery sandbox workers on Redis. The mix, over
   HumanEval's 164 tasks: correct answers (the canonical solution, whole, as a
   prompt-continuing body, or in a Markdown fence), wrong ones (returns None, raises,
   does not parse), and a few hostile ones: `sys.exit(0)` at import or in the call,
   and an infinite loop against a copy of a task whose wall limit is 1 s. The reward
   API's in-flight limit (REWARD_MAX_IN_FLIGHT, --max-in-flight) is set below what
   the clients send at once, so the 429 + Retry-After path is taken and retried by
   the client; every DROP_EVERY-th batch is first posted with a tiny read timeout (a
   connection dropped after sending) and then retried under the same idempotency key.
   Figures: lost (sent, no verdict came back), errors (failed calls other than the
   429s the client retried), retried_429, verdicts_wrong (a correct answer not
   rewarded 1, or a wrong or hostile one rewarded > 0; a sandbox_error, which has no
   reward by design, is counted apart as sandbox_errors), run_twice (completions
   stored or run more than once, read back from the database), latency p50/p99 per
   batch (first send to the last verdict, retries included) and completions/s.
2. Verification: TASKS task versions (HumanEval's 164 cycled under distinct slugs, a
   comment naming the copy appended to the tests so every copy has its own content
   hash) are submitted and their verification queued through
   `evaluation.verification.curator_actions.verifications_request_many` (what the curator UI's
   bulk action calls: `evaluation.verify_version` on the default queue, which plans
   and fans executions out to the sandbox queue); the bench waits until every one is
   done. Figures: verify_wall_s, verify_executions_per_s, verify_tasks_per_s,
   verify_lost (versions whose verification never finished and that nothing is
   running for) and verify_stuck (verifications left running, or executions left
   claimed, at the end). VERIFY_REPEATS and VERIFY_MUTANTS (--repeats, --mutants) are
   kept small so the backlog drains in minutes on 2 cores; probes are always on.

Everything runs in a throwaway PostgreSQL database (bench_load_<pid>, dropped at the
end) with Redis database 13 as the broker (emptied before and after). Progress goes
to stderr; the last line of stdout is one JSON object. The exit status is 1 when
lost, errors, verdicts_wrong, run_twice, verify_lost or verify_stuck is not 0.

Usage: .venv/bin/python bench/load.py [--requests N] [--tasks N] [--clients C] [--batch B]
       (a quick check: --requests 200 --tasks 50)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import queue
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack import (
    CORES,
    ROOT,
    in_throwaway_database,
    platform_env,
    say,
    server_url,
    start_platform,
    start_worker,
    system_busy_s,
)

sys.path.insert(0, str(ROOT))
SCRATCH = Path(tempfile.mkdtemp(prefix="bench-load-"))
DB_NAME = f"bench_load_{os.getpid()}"
REDIS_URL = "redis://127.0.0.1:6379/13"  # this bench's own Redis database: only it is flushed
LOG_LEVEL = os.environ.get("BENCH_LOG_LEVEL", "WARNING")
BASE_URL = os.environ.get("DATABASE_URL") or server_url()
os.environ.update(platform_env(BASE_URL.rsplit("/", 1)[0] + f"/{DB_NAME}", REDIS_URL, SCRATCH))

SHORT_LIMIT_S = 1.0  # the wall limit of the task the infinite loops are sent to
SHORT_SLUG = "load-short-limit"
DEADLINE_S = 300.0  # what a batch may wait for its verdicts: far above any latency seen here


# -- the completions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One completion sent, and what its reward must be."""

    client_id: str
    version_hash: str
    completion: str
    kind: str  # correct, wrong, exit (sys.exit(0)) or loop (infinite loop, short limit)

    @property
    def must_pass(self) -> bool:
        return self.kind == "correct"


def correct_answer(reference: str, prompt: str, variant: int) -> str:
    """The canonical solution as a model might write it: whole, as a body continuing the
    prompt (HumanEval's convention), or inside a Markdown answer."""
    if variant == 0:
        return reference
    if variant == 1 and reference.startswith(prompt):
        return reference[len(prompt) :]
    return f"Here is my solution:\n```python\n{reference}\n```\nIt handles the edge cases."


def wrong_answer(entry_point: str, variant: int) -> str:
    if variant == 0:
        return f"def {entry_point}(*args, **kwargs):\n    return None\n"
    if variant == 1:
        return f"def {entry_point}(*args, **kwargs):\n    raise NotImplementedError\n"
    if variant == 2:
        return f"def {entry_point}(*args, **kwargs:\n    return 1\n"  # does not parse
    return f"Sure!\n```python\ndef {entry_point}(*args, **kwargs):\n    return []\n```\n"


def exit_answer(entry_point: str, variant: int) -> str:
    """A documented reward hack: leave with status 0 before any test can fail."""
    if variant == 0:
        return f"import sys\nsys.exit(0)\n\n\ndef {entry_point}(*args, **kwargs):\n    return None\n"
    return f"def {entry_point}(*args, **kwargs):\n    import sys\n    sys.exit(0)\n"


def humaneval_lines() -> list[dict[str, Any]]:
    from evaluation.verification import audit

    with gzip.open(audit.default_dataset(), "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def import_lines(actor: Any, lines: list[dict[str, Any]], fmt: str) -> list[str]:
    from tasks_app.importers.service import tasks_import

    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    report = tasks_import(actor=actor, data=data, fmt=fmt, filename="bench-load.jsonl")
    if not report.ok:
        raise SystemExit(f"import refused: {report.errors[:3]}")
    return [item["slug"] for item in report.items]


def short_limit_version(actor: Any, source: dict[str, Any]) -> Any:
    """A copy of a HumanEval task with a 1 s wall limit (native format): an infinite loop
    against it costs a sandbox slot one second, not the default ten."""
    from dataclasses import replace

    from evaluation.verification import audit
    from tasks_app.importers import humaneval, native

    record = humaneval.to_record(source)
    content = replace(record.content, time_limit_s=SHORT_LIMIT_S)
    line = {"format": native.FORMAT_ID, "slug": SHORT_SLUG, "title": f"{record.title} (1 s limit)",
            "tags": ["bench-load"], "version": content.canonical()}  # fmt: skip
    return audit.latest_versions(import_lines(actor, [line], "native"))[0]


def reward_items(count: int, versions: list[Any], short: Any, *, prefix: str, seed: int) -> list[Item]:
    """`count` completions over `versions`: about 2% exit hacks, 1% infinite loops (sent to
    the short-limit copy), the rest correct or wrong at even odds, in a shuffled order."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible mix, not secrets
    references = {v.pk: v.solutions.get(role="reference", label="canonical").code for v in versions}
    short_reference = short.solutions.get(role="reference").code
    items = []
    for n in range(count):
        version = versions[rng.randrange(len(versions))]
        variant = rng.randrange(4)
        if n % 50 == 7:
            kind, text = "exit", exit_answer(version.entry_point, variant % 2)
        elif n % 100 == 33:
            version, kind = short, "loop"
            text = f"def {short.entry_point}(*args, **kwargs):\n    while True:\n        pass\n"
        elif rng.random() < 0.5:
            kind, text = "correct", correct_answer(references[version.pk], version.starter_code, variant % 3)
        else:
            kind, text = "wrong", wrong_answer(version.entry_point, variant)
        items.append(Item(f"{prefix}{n}", version.content_hash, text, kind))
    if short_reference:  # one correct answer to the short-limit task, so its limit is shown not to fail a pass
        items[0] = Item(f"{prefix}0", short.content_hash, short_reference, "correct")
    return items


# -- the clients -------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one client thread saw; summed over the threads at the end."""

    latencies: list[float] = field(default_factory=list)
    latencies_unrefused: list[float] = field(default_factory=list)  # batches that met no 429
    retry_after_s: list[float] = field(default_factory=list)  # what each 429 asked the client to wait
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: Counter = field(default_factory=Counter)  # HTTP status of every response
    errors: list[str] = field(default_factory=list)
    errors_429: int = 0  # 429s the client gave up on (counted as errors, not as retried)
    dropped: int = 0
    dropped_replayed: int = 0
    finished_at: float = 0.0  # perf_counter when the thread found no batch left


def client_thread(base: str, secret: str, batches: queue.Queue, tally: Tally, drop_every: int) -> None:
    """Take batches until none is left, each through this thread's own client and session."""
    import requests

    from trainer_bridge.client import PlatformClient, PlatformError, Retry

    # A trainer under back-pressure keeps retrying: more tries than the default six, so a
    # 429 storm shows up as waiting (latency, retried_429), not as a lost batch.
    client = PlatformClient(base, token=secret, retry=Retry(attempts=40, base_s=0.5, max_s=10.0))

    def seen(response: requests.Response, *_: Any, **__: Any) -> None:
        tally.statuses.update([response.status_code])
        if response.status_code == 429 and response.headers.get("Retry-After"):
            tally.retry_after_s.append(float(response.headers["Retry-After"]))

    client.http.hooks["response"].append(seen)
    while True:
        try:
            number, batch = batches.get_nowait()
        except queue.Empty:
            tally.finished_at = time.perf_counter()
            return
        body = [{"version_hash": i.version_hash, "completion": i.completion, "id": i.client_id} for i in batch]
        key = uuid.uuid4().hex
        sent, refused_before = time.perf_counter(), tally.statuses[429]
        dropped = bool(drop_every) and number % drop_every == drop_every - 1
        if dropped:
            # The request leaves whole and the answer is never read: a connection dropped
            # mid-wait. The retry below, under the same key, must not store or run it again.
            tally.dropped += 1
            try:
                client.http.post(f"{base}/api/v1/rewards", json={"completions": body, "deadline_s": DEADLINE_S},
                                    headers={"Idempotency-Key": key}, timeout=(5, 0.05))  # fmt: skip
            except requests.RequestException:
                pass
        try:
            answer = client.reward_batch(body, deadline_s=DEADLINE_S, idempotency_key=key)
        except PlatformError as exc:
            tally.errors.append(f"batch {number}: {exc}")
            tally.errors_429 += exc.status == 429
            continue
        except Exception as exc:  # any other failure is an error too; the run goes on to count the rest
            tally.errors.append(f"batch {number}: {type(exc).__name__}: {exc}")
            continue
        tally.latencies.append(time.perf_counter() - sent)
        if tally.statuses[429] == refused_before:
            tally.latencies_unrefused.append(tally.latencies[-1])
        tally.dropped_replayed += dropped and bool(answer.get("replayed"))
        for result in answer["results"]:
            tally.results[str(result["id"])] = result


def post_all(base: str, secret: str, items: list[Item], *, clients: int, batch: int,
             drop_every: int) -> tuple[float, list[Tally]]:  # fmt: skip
    batches: queue.Queue = queue.Queue()
    for number, start in enumerate(range(0, len(items), batch)):
        batches.put((number, items[start : start + batch]))
    tallies = [Tally() for _ in range(clients)]
    threads = [threading.Thread(target=client_thread, args=(base, secret, batches, tally, drop_every), daemon=True)
               for tally in tallies]  # fmt: skip
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    total = (len(items) + batch - 1) // batch
    last_report = started
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)
            if time.perf_counter() - last_report >= 5:
                last_report = time.perf_counter()
                answered = sum(len(t.latencies) + len(t.errors) for t in tallies)
                say(f"  {answered}/{total} batches answered, {last_report - started:.0f} s")
    # Until the last client finished, not until this loop looked: the wall time is exact.
    return max(t.finished_at for t in tallies) - started, tallies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


# -- 1. rewards --------------------------------------------------------------------------------


def rewards_phase(args: argparse.Namespace, base: str, actor: Any) -> dict[str, Any]:
    from django.db.models import Count, Q

    from evaluation.verification import audit
    from tasks_app.services import api_token_create
    from trainer_bridge.models import RewardBatch, RewardItem

    say("importing HumanEval and a 1 s-limit copy of its first task")
    lines = humaneval_lines()
    versions = audit.latest_versions(import_lines(actor, lines, "humaneval"))
    short = short_limit_version(actor, lines[0])
    secret = api_token_create(user=actor, name="bench-load", scopes=["reward", "read"]).secret

    # A warm-up (every sandbox slot started, every connection open), not in the figures.
    warmup = reward_items(args.clients * args.batch, versions, short, prefix="w", seed=1)
    say(f"warm-up: {len(warmup)} completions")
    post_all(base, secret, warmup, clients=args.clients, batch=args.batch, drop_every=0)

    items = reward_items(args.requests, versions, short, prefix="c", seed=0)
    kinds = Counter(i.kind for i in items)
    say(f"rewards: {len(items)} completions ({dict(kinds)}), {args.clients} clients, batches of {args.batch}")
    busy = system_busy_s()
    wall, tallies = post_all(base, secret, items, clients=args.clients, batch=args.batch, drop_every=args.drop_every)
    busy = system_busy_s() - busy

    results: dict[str, dict[str, Any]] = {}
    for tally in tallies:
        results.update(tally.results)
    statuses = Counter(r["status"] for r in results.values())
    lost = sum(1 for i in items if results.get(i.client_id, {}).get("status") in (None, "pending", "running"))
    wrong = []
    for item in items:
        result = results.get(item.client_id)
        if result is None or result["status"] in ("pending", "running", "sandbox_error"):
            continue  # lost, or no reward by design: counted apart
        if (item.must_pass and result["reward"] != 1.0) or (not item.must_pass and (result["reward"] or 0) > 0):
            wrong.append(f"{item.client_id} ({item.kind}): {result['status']} reward {result['reward']} "
                         f"{result['message'][:120]!r}")  # fmt: skip
    for line in wrong[:10]:
        say(f"  wrong verdict: {line}")
    errors = [e for t in tallies for e in t.errors]
    for line in errors[:10]:
        say(f"  error: {line}")
    http = sum((t.statuses for t in tallies), Counter())
    latencies = [s for t in tallies for s in t.latencies]
    unrefused = [s for t in tallies for s in t.latencies_unrefused]
    retry_after = [s for t in tallies for s in t.retry_after_s]

    # Read back from the database: every completion stored once, claimed once, finished.
    sent_ids = [i.client_id for i in items] + [i.client_id for i in warmup]
    stored = RewardItem.objects.aggregate(
        rows=Count("pk"),
        ids=Count("client_id", distinct=True),
        unfinished=Count("pk", filter=Q(finished_at__isnull=True)),
        claimed_again=Count("pk", filter=Q(tries__gt=1)),
    )
    batches_sent = -(-len(items) // args.batch) + -(-len(warmup) // args.batch)
    run_twice = stored["rows"] - stored["ids"]
    if stored["ids"] != len(set(sent_ids)):
        say(f"  WARNING: {stored['ids']} distinct completions stored, {len(sent_ids)} sent")
    figures = {
        "lost": lost,
        "errors": len(errors),
        "verdicts_wrong": len(wrong),
        "run_twice": run_twice,
        "retried_429": http[429] - sum(t.errors_429 for t in tallies),
        "sandbox_errors": statuses.get("sandbox_error", 0),
        "reward_completions_per_s": round(len(items) / wall, 2),
        "reward_latency_p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "reward_latency_p99_s": round(percentile(latencies, 0.99), 3) if latencies else None,
        "reward_latency_max_s": round(max(latencies), 3) if latencies else None,
        # The same, over the batches that were never refused: what back-off adds is the difference.
        "reward_latency_p50_unrefused_s": round(statistics.median(unrefused), 3) if unrefused else None,
        "reward_latency_p99_unrefused_s": round(percentile(unrefused, 0.99), 3) if unrefused else None,
        "retry_after_s_median": statistics.median(retry_after) if retry_after else None,
        "retry_after_s_max": max(retry_after) if retry_after else None,
        "reward_wall_s": round(wall, 2),
        # Near 1: every core was busy (ours or a neighbour's), so the figures above are CPU-bound.
        "reward_machine_busy_share": round(busy / (wall * CORES), 3),
        "completions": len(items),
        "completions_by_kind": dict(sorted(kinds.items())),
        "verdicts_by_status": dict(sorted(statuses.items())),
        "batches": -(-len(items) // args.batch),
        "http_statuses": {str(k): v for k, v in sorted(http.items())},
        "dropped_then_retried": sum(t.dropped for t in tallies),
        "dropped_answered_as_replay": sum(t.dropped_replayed for t in tallies),
        "db_reward_items": stored["rows"],
        "db_reward_batches": RewardBatch.objects.count(),
        "db_batches_expected": batches_sent,
        "db_items_unfinished": stored["unfinished"],
        "db_items_claimed_again": stored["claimed_again"],
        "warmup_completions": len(warmup),
    }
    say(f"rewards: {figures['reward_completions_per_s']} completions/s, p50 {figures['reward_latency_p50_s']} s, "
        f"p99 {figures['reward_latency_p99_s']} s; lost {lost}, errors {len(errors)}, wrong {len(wrong)}, "
        f"429s retried {figures['retried_429']}")  # fmt: skip
    return figures


# -- 2. verification ---------------------------------------------------------------------------


def verify_phase(args: argparse.Namespace, actor: Any) -> dict[str, Any]:
    from django.db.models import Count, Q, Sum

    from evaluation.models import Execution, Verification, VerificationState
    from evaluation.verification import audit
    from evaluation.verification.curator_actions import verifications_request_many
    from tasks_app.models import Task

    lines = humaneval_lines()
    copies = []
    for n in range(args.tasks):
        source, copy = dict(lines[n % len(lines)]), n // len(lines)
        source["task_id"] = f"Load/{copy}/{source['task_id']}"
        source["test"] = f"{source['test'].rstrip()}\n\n# bench/load.py copy {copy}\n"
        copies.append(source)
    started = time.perf_counter()
    slugs = import_lines(actor, copies, "humaneval")
    audit.drafts_submit(slugs=slugs, actor=actor)  # submitted, so a verdict moves the task as in production
    versions = audit.latest_versions(slugs)
    version_ids = [v.pk for v in versions]
    say(f"verification: {len(versions)} versions imported and submitted in {time.perf_counter() - started:.1f} s")

    started, busy = time.perf_counter(), system_busy_s()
    queued = verifications_request_many(actor=actor, tasks=Task.objects.filter(slug__in=slugs))
    final = (VerificationState.DONE, VerificationState.INFRASTRUCTURE_ERROR)
    ours = Verification.objects.filter(version_id__in=version_ids)
    executions = Execution.objects.filter(verification__version_id__in=version_ids)
    deadline = started + args.verify_timeout
    last_report = 0.0
    while True:
        finished = ours.filter(state__in=final).count()
        if finished >= len(version_ids) or time.perf_counter() > deadline:
            break
        if time.perf_counter() - last_report >= 10:
            last_report = time.perf_counter()
            open_status = Q(status__in=("pending", "running"))
            counts = executions.aggregate(total=Count("pk"), done=Count("pk", filter=~open_status))
            say(f"  {finished}/{len(version_ids)} verifications done, executions {counts['done']}/{counts['total']}"
                f", {last_report - started:.0f} s")  # fmt: skip
        time.sleep(0.5)
    wall, busy = time.perf_counter() - started, system_busy_s() - busy

    states = Counter(ours.values_list("state", flat=True))
    verdicts = Counter(ours.filter(state=VerificationState.DONE).values_list("verdict", flat=True))
    by_status = Counter(executions.values_list("status", flat=True))
    unfinished = ours.exclude(state__in=final)
    # Stuck: something was taken and never let go (an execution left claimed), or every
    # execution ended and the verification was never finished. Lost: nothing holds it.
    claimed = set(executions.filter(status="running").values_list("verification__version_id", flat=True))
    open_runs = unfinished.annotate(left=Count("executions", filter=Q(executions__status__in=("pending", "running"))))
    never_finished = set(open_runs.filter(left=0).values_list("version_id", flat=True))
    stuck = claimed | never_finished
    done_ids = set(ours.filter(state__in=final).values_list("version_id", flat=True))
    lost = len(set(version_ids) - done_ids - stuck)
    ran = sum(n for status, n in by_status.items() if status not in ("pending", "running"))
    # The share of the workers' task threads spent inside a sandbox run; the rest is
    # Celery, the database and waiting for a core.
    in_sandboxes = executions.aggregate(total=Sum("wall_s"))["total"] or 0.0
    figures = {
        "verify_wall_s": round(wall, 2),
        "verify_executions_per_s": round(ran / wall, 2),
        "verify_tasks_per_s": round(len(done_ids) / wall, 3),
        "verify_lost": lost,
        "verify_timed_out": len(done_ids) < len(version_ids),
        "verify_stuck": len(stuck),
        "verify_sandbox_occupancy": round(in_sandboxes / (wall * args.workers * args.concurrency), 3),
        "verify_machine_busy_share": round(busy / (wall * CORES), 3),
        "verify_tasks": len(version_ids),
        "verify_queued": queued,
        "verify_executions": sum(by_status.values()),
        "verify_executions_by_status": dict(sorted(by_status.items())),
        "verify_executions_claimed_again": executions.filter(attempts__gt=1).exclude(status="sandbox_error").count(),
        "verify_states": {str(k): v for k, v in sorted(states.items())},
        "verify_infrastructure_errors": states.get(VerificationState.INFRASTRUCTURE_ERROR, 0),
        "verify_verdicts": dict(sorted(verdicts.items())),
    }
    say(f"verification: {len(done_ids)}/{len(version_ids)} done in {wall:.1f} s, {figures['verify_executions_per_s']}"
        f" executions/s; lost {lost}, stuck {len(stuck)}")  # fmt: skip
    return figures


# -- the run -----------------------------------------------------------------------------------


def run(args: argparse.Namespace, processes: list[subprocess.Popen]) -> dict[str, Any]:
    from evaluation.verification import audit
    from evaluation.verification.config import VerifyConfig

    actor = audit.auditor_user()
    say(f"starting gunicorn and {args.workers} Celery workers (logs under {SCRATCH})")
    worker_options = {"worker_pool": "threads", "concurrency": args.concurrency, "slots": args.slots,
                      "log_level": LOG_LEVEL}  # fmt: skip
    base = start_platform(processes, SCRATCH, name="bench-load-1", web_threads=args.clients * 2 + 8,
                          **worker_options)  # fmt: skip
    for n in range(2, args.workers + 1):
        start_worker(processes, SCRATCH, name=f"bench-load-{n}", log_name=f"worker-{n}.log", **worker_options)
    config = VerifyConfig.from_settings()
    figures: dict[str, Any] = {"bench": "load"}
    figures.update(rewards_phase(args, base, actor))
    figures.update(verify_phase(args, actor))
    figures["config"] = {
        "clients": args.clients,
        "batch": args.batch,
        "requests": args.requests,
        "workers": args.workers,
        "worker_pool": "threads",
        "concurrency": args.concurrency,
        "sandbox_slots_per_worker": args.slots,
        "web": f"gunicorn gthread, 1 process, {args.clients * 2 + 8} threads",
        "reward_max_in_flight": int(os.environ["REWARD_MAX_IN_FLIGHT"]),
        "drop_every": args.drop_every,
        "tasks": args.tasks,
        "verify_repeats": config.repeats,
        "verify_mutants": config.mutants,
        "verify_probes": config.probes,
        "cores": CORES,
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="completions sent to the reward API")
    parser.add_argument("--tasks", type=int, default=500, help="task versions verified")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads")
    parser.add_argument("--batch", type=int, default=16, help="completions a request")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--concurrency", type=int, default=CORES, help="task threads a worker")
    parser.add_argument("--slots", type=int, default=CORES, help="warm sandboxes a worker")
    parser.add_argument("--max-in-flight", type=int, default=128,
                        help="REWARD_MAX_IN_FLIGHT; below clients x batch, so 429s are sent and retried")  # fmt: skip
    parser.add_argument("--drop-every", type=int, default=10, help="every Nth batch: a dropped connection, retried")
    parser.add_argument("--repeats", type=int, default=1, help="VERIFY_REPEATS")
    parser.add_argument("--mutants", type=int, default=2, help="VERIFY_MUTANTS")
    # Only a backstop for a run that hangs: versions unfinished when it passes count as lost or stuck.
    parser.add_argument("--verify-timeout", type=float, default=1800.0, help="seconds to wait for the verifications")
    args = parser.parse_args()

    # Before Django reads its settings here, and inherited by the workers started later.
    os.environ["REWARD_MAX_IN_FLIGHT"] = str(args.max_in_flight)
    os.environ["VERIFY_REPEATS"] = str(args.repeats)
    os.environ["VERIFY_MUTANTS"] = str(args.mutants)
    figures = in_throwaway_database(BASE_URL, DB_NAME, REDIS_URL, lambda processes: run(args, processes))
    print(json.dumps(figures))
    failed = [k for k in ("lost", "errors", "verdicts_wrong", "run_twice", "verify_lost", "verify_stuck") if figures[k]]
    if failed:
        say(f"FAILED: {', '.join(f'{k} = {figures[k]}' for k in failed)} (logs under {SCRATCH})")
        sys.exit(1)
    # Kept only for a failed run: the replay store of a full run is some 60 MB.
    shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
