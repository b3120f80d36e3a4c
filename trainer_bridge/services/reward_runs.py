"""The worker's side of the reward API: claim a chunk's completions, run them side
by side on the warm sandbox pool, and write their verdicts and rewards.

Idempotent: a chunk delivered again (a worker died, a broker restarted) runs only
what it can claim, and a verdict is written only over a row still `running`.
Rewards: `passed` earns 1. In `fraction` mode any other verdict earns the
fraction of tests passed, kept below 1 (only a pass earns 1). `sandbox_error`
earns no reward (null): a broken sandbox is our fault, not a wrong answer. The
server runs such a completion again (REWARD SANDBOX_RETRIES times at most) before
it answers null, and each result says how many retries it needed.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import Status
from tasks_app.models import TaskVersion
from trainer_bridge.models import RewardBatch, RewardItem
from trainer_bridge.services import reward_rows, wakeups
from trainer_bridge.services.rewards import options

log = logging.getLogger(__name__)

# A claim older than this belongs to a dead worker: no run, retried once, takes as long.
STALE_CLAIM = timedelta(seconds=2 * 600 + 60)
MESSAGE_KEPT = 500  # characters of a failing test's message in a result
STDERR_KEPT = 2000  # characters of stderr kept for a solution that does not load


@dataclass(eq=False)
class Claimed:
    """A completion this worker claimed, with what running it needs, then its verdict
    (set by _verdict, written by reward_rows.reward_verdicts_write). Plain data:
    building a RewardItem and its RewardBatch for each cost ~60 us of the worker's
    Python a completion."""

    pk: int
    index: int
    batch_id: Any
    version: TaskVersion
    code: str
    seed: int
    reward_mode: str
    status: str = "running"
    reward: float | None = None
    tests_passed: int = 0
    tests_total: int = 0
    result: dict[str, Any] = field(default_factory=dict)
    wall_s: float | None = None
    cpu_s: float | None = None
    finished_at: Any = None


def _claim(item_ids: list[int], *, worker: str, now: Any) -> list[Claimed]:
    """Mark the items running and return those this call won (pending ones, or running
    ones whose worker has evidently died: claimed longer ago than any run can take),
    with their batch's seed and reward mode and their version, in index order."""
    won = reward_rows.reward_items_claim(item_ids, worker=worker, now=now, stale=now - STALE_CLAIM)
    if not won:
        return []
    batch_key = RewardBatch._meta.pk.to_python
    versions = _versions_by_id({r[3] for r in won})
    return [Claimed(pk, index, batch_key(batch_id), versions[version_id], code, seed, mode)
            for pk, index, batch_id, version_id, code, seed, mode in sorted(won, key=lambda r: r[1])]  # fmt: skip


# Task versions never change once saved (tasks_app's ImmutableQuerySet) and their ids
# are never given to another committed row, so a worker keeps the ones it has run: a
# training job asks for the same tasks step after step. (Tests that roll back and reuse
# ids clear it: tests/conftest.py.)
_VERSION_CACHE: dict[int, TaskVersion] = {}
_VERSION_CACHE_SIZE = 4096
_RUN_FIELDS = ("id", "content_hash", "suite_kind", "entry_point", "starter_code", "test_setup", "visible_tests",
               "hidden_tests", "time_limit_s", "memory_limit_mb", "language", "comparator")  # fmt: skip


def _versions_by_id(ids: set[int]) -> dict[int, TaskVersion]:
    missing = ids - _VERSION_CACHE.keys()
    if missing:
        if len(_VERSION_CACHE) + len(missing) > _VERSION_CACHE_SIZE:
            _VERSION_CACHE.clear()
        _VERSION_CACHE.update((v.pk, v) for v in TaskVersion.objects.filter(pk__in=missing).only(*_RUN_FIELDS))
    return {pk: _VERSION_CACHE[pk] for pk in ids}


def reward_for(status: str, passed: int, total: int, mode: str) -> float | None:
    """The reward a verdict earns (see the module docstring)."""
    if status in (Status.SANDBOX_ERROR, Status.CHECKER_ERROR):  # nothing was decided about the solution
        return None
    if status == Status.PASSED:
        return 1.0
    if mode == "fraction" and total > 0:
        return min(passed / total, (total - 1) / total)
    return 0.0


def expected_tests(version: TaskVersion) -> int:
    """Tests the judge must report for this version (pytest suites report what they collect)."""
    if version.suite_kind == "pytest":
        return 0
    return len(version.visible_tests or []) + len(version.hidden_tests or [])


_runners: ThreadPoolExecutor | None = None
_runners_lock = threading.Lock()


def _runner_threads(size: int) -> ThreadPoolExecutor:
    """Threads that only run sandboxes (no database), one per slot of the process's warm
    pool and kept for its life: a chunk's verdicts are written by the task's own thread
    and connection, so no chunk opens connections of its own."""
    global _runners
    with _runners_lock:
        if _runners is None:
            _runners = ThreadPoolExecutor(max_workers=size, thread_name_prefix="reward-run")
        return _runners


# Pauses before the server's own retries of a completion whose run was a
# sandbox_error: a killed sandbox or an engine restarting is usually over by then.
RETRY_PAUSES_S = (0.2, 1.0, 2.0)
_BUSY = object()  # _run_one's answer when every sandbox was busy: nothing ran


def reward_items_run(*, item_ids: list[int], worker: str | None = None) -> int:
    """Run the items this call can claim, side by side on the warm pool, and record
    their verdicts. Returns how many it ran. Idempotent: a redelivered chunk finds its
    items claimed or finished and runs nothing twice.

    Steps: claim; run every item (one item's failure, whatever it is, is that item's
    sandbox_error alone); write the verdicts in; run again, up to REWARD
    SANDBOX_RETRIES times, the items whose run was a sandbox_error, writing each
    round's verdicts as they come; items that found every sandbox busy go back to
    pending for the task's retry. Should anything still escape (the database gone),
    the items not yet written go back to pending rather than wait out a stale claim."""
    from evaluation.sandbox.errors import SandboxUnavailable
    from evaluation.sandbox.worker_names import worker_name

    me = worker or worker_name()
    items = _claim(item_ids, worker=me, now=timezone.now())
    if not items:
        return 0
    written: set[int] = set()
    try:
        busy = _run_with_retries(items, written)
    except BaseException:
        _release([item.pk for item in items if item.pk not in written])
        raise
    if busy:
        raise SandboxUnavailable(f"{len(busy)} completions found every sandbox busy; they wait for a retry")
    return len(items)


def _run_with_retries(items: list[Claimed], written: set[int]) -> list[int]:
    """Run `items` and write their verdicts, retrying sandbox errors (see
    reward_items_run); returns the ids of those left pending because the pool was busy."""
    from evaluation.sandbox import engine

    runners = _runner_threads(engine.get_pool().size)
    retries = max(0, int(options().get("SANDBOX_RETRIES", 2)))
    todo, busy = items, []
    for retry in range(retries + 1):
        if retry:
            time.sleep(RETRY_PAUSES_S[min(retry, len(RETRY_PAUSES_S)) - 1])
        # Every verdict of a round is written together once all are in, so waiting on each
        # in turn costs nothing; as_completed hung a waiter on every future and woke the
        # task's thread once per run (~0.1 ms of the worker's Python a completion).
        runs = [(runners.submit(_run_one, item), item) for item in todo]
        finished, again, busy_now = [], [], []
        for future, item in runs:
            result = future.result()
            if result is _BUSY:
                busy_now.append(item.pk)
                continue
            _verdict_or_error(item, result, retries=retry)
            (again if item.status == Status.SANDBOX_ERROR and retry < retries else finished).append(item)
        reward_rows.reward_verdicts_write(finished)
        written.update(item.pk for item in finished)
        if busy_now:
            _release(busy_now)
            written.update(busy_now)
            busy += busy_now
        batches = {item.batch_id for item in finished}
        reward_rows.reward_batches_finish(batches)
        for batch_id in batches:
            wakeups.notify(batch_id)
        if again:
            log.info("retrying %d completion(s) whose run was a sandbox_error (retry %d of %d)",
                     len(again), retry + 1, retries)  # fmt: skip
        todo = again
        if not todo:
            break
    return busy


def _run_one(item: Claimed) -> Any:
    """One completion's RunResult; _BUSY when every sandbox was busy; a sandbox_error
    result when anything else went wrong on our side, so it is this item's alone."""
    from evaluation.sandbox import engine
    from evaluation.sandbox.errors import PoolBusy
    from evaluation.sandbox.types import RunResult

    try:
        return engine.run(run_request_for(item.version, item.code, seed=item.seed))
    except PoolBusy:
        return _BUSY
    except Exception as exc:
        log.exception("the platform failed to run reward item %s", item.pk)
        return RunResult(status=Status.SANDBOX_ERROR, message=f"the platform failed to run it: {_said(exc)}")


def _verdict_or_error(item: Claimed, result: Any, *, retries: int) -> Claimed:
    try:
        _verdict(item, result)
    except Exception as exc:  # a result this code could not read is ours, and this item's alone
        log.exception("could not read the verdict of reward item %s", item.pk)
        item.status, item.reward, item.tests_passed, item.tests_total = str(Status.SANDBOX_ERROR), None, 0, 0
        item.result = {"tests": [], "message": f"the platform could not read its verdict: {_said(exc)}"}
        item.wall_s = item.cpu_s = None
        item.finished_at = timezone.now()
    item.result["retries"] = retries
    return item


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MESSAGE_KEPT]


def _release(pks: list[int]) -> None:
    """Claimed items this call will not finish go back to pending, for the next delivery."""
    if pks:
        RewardItem.objects.filter(pk__in=pks, status="running").update(status="pending", started_at=None)


def _verdict(item: Claimed, result: Any) -> Claimed:
    """`item` with `result`'s verdict and reward set (not yet saved)."""
    tests = [{"name": t.name, "outcome": t.outcome, "message": t.message[:MESSAGE_KEPT],
              "duration_s": round(t.duration_s, 6)} for t in result.tests]  # fmt: skip
    passed = sum(1 for t in result.tests if t.outcome == "passed")
    total = max(len(result.tests), expected_tests(item.version))
    status = str(result.status)
    item.result = {
        "tests": tests,
        "message": result.message[:MESSAGE_KEPT],
        "stderr": result.stderr[-STDERR_KEPT:] if status == Status.ERROR else "",
        "exit_code": result.exit_code,
        "signal": result.signal,
        "backend": result.backend,
        "sandbox_id": result.sandbox_id,
        "runtime_fingerprint": result.runtime_fingerprint,
        "harness_version": result.harness_version,
        "request_digest": result.request_digest,
        "attempts": result.attempts,
    }
    item.status, item.tests_passed, item.tests_total = status, passed, total
    item.reward = reward_for(status, passed, total, item.reward_mode)
    item.wall_s, item.cpu_s, item.finished_at = result.wall_s, result.cpu_s, timezone.now()
    return item


GIVE_UP_AFTER_S = 3600.0  # an item no worker finished within this long is given up (sandbox_error)


def rewards_reap(*, resend_after_s: float = 60.0) -> tuple[list[list[int]], int]:
    """Find items left behind (their message lost with a broker, their worker dead).
    Returns (chunks to enqueue again, items given up). An item waiting past
    `resend_after_s` is sent again (harmless: a chunk runs only what it claims);
    one unfinished after GIVE_UP_AFTER_S is a `sandbox_error` with no reward: the
    platform failed it, the completion did not."""
    now = timezone.now()
    given_up = RewardItem.objects.filter(
        finished_at__isnull=True, queued_at__lt=now - timedelta(seconds=GIVE_UP_AFTER_S)
    )
    batches = set(given_up.values_list("batch_id", flat=True))
    why = {"message": "no sandbox worker finished it within an hour", "tests": []}
    abandoned = given_up.update(status=str(Status.SANDBOX_ERROR), reward=None, finished_at=now, result=why)
    reward_rows.reward_batches_finish(batches)
    stale = now - STALE_CLAIM
    left = RewardItem.objects.filter(
        Q(status="pending", queued_at__lt=now - timedelta(seconds=resend_after_s))
        | Q(status="running", started_at__lt=stale)
    ).order_by("batch_id", "index")
    ids = list(left.values_list("pk", flat=True)[:10000])
    size = max(1, int(options()["CHUNK"]))
    return [ids[i : i + size] for i in range(0, len(ids), size)], abandoned
