"""A verification's executions in chunks: one queue message runs several executions
side by side on the worker's warm sandbox pool.

Why: a message costs a round trip through the broker and the worker whatever it
carries. On the embedded filesystem broker (`make run`) a worker lists the whole
queue folder for every message it takes and, once its slots are full, looks again
only every polling interval; with one message per execution of ~20 ms its slots sat
empty most of the time (2 executions a second where `verify --sync` ran 41). A
chunk pays that once for many runs, and asks `verification_finish` once, not once a
run. With Redis a message is cheap and a reward chunk waits behind at most the
message in hand, so there a chunk is one execution unless VERIFY_CHUNK says more
(settings.VERIFICATION["CHUNK"]).

Idempotent as a single execution is: each execution of a chunk is claimed on its
own by `execution_run`, so a chunk delivered again runs only what it can claim, and
one execution's failure is that execution's alone.

A chunk gives way to reward work: once it has started as many runs as the pool has
slots, it starts no more while a reward chunk waits in the broker, and hands back the
rest to be sent again. A reward then waits for the runs in hand, as it did behind one
execution a message, not for the rest of a chunk.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from evaluation.models import Execution
from evaluation.sandbox.errors import SandboxUnavailable
from evaluation.sandbox.worker_names import worker_name
from evaluation.verification.executions import RunContext, execution_claim_stale_in, execution_run
from evaluation.verification.threads import run_on_threads

log = logging.getLogger(__name__)

# A chunk's runs, at their time limits one after another, take at most about this
# long: a task whose runs may take minutes goes in smaller chunks (one per message
# at 160 s and above), so neither a chunk nor a reward waiting behind it runs for an
# hour. Task time limits are 10 s by default: 16 a chunk.
CHUNK_WALL_S = 160.0


def chunk_size_for(*, time_limit_s: float, configured: int | None = None) -> int:
    """Executions a message for a version with this time limit: VERIFICATION["CHUNK"]
    (or `configured`), fewer where CHUNK_WALL_S would not hold them at the limit."""
    size = int(settings.VERIFICATION.get("CHUNK", 1)) if configured is None else int(configured)
    if size < 1:
        raise ValueError(f"a chunk holds at least one execution, not {size} (VERIFY_CHUNK)")
    if not time_limit_s > 0:
        raise ValueError(f"a time limit is a positive number of seconds, not {time_limit_s!r}")
    return max(1, min(size, int(CHUNK_WALL_S // float(time_limit_s))))


def execution_chunks(execution_ids: list[int], *, size: int) -> list[list[int]]:
    """`execution_ids` cut into chunks of at most `size`, in the order given (the run
    order: references first, whose times set the mutants' caps)."""
    if size < 1:
        raise ValueError(f"a chunk holds at least one execution, not {size}")
    return [list(execution_ids[start : start + size]) for start in range(0, len(execution_ids), size)]


def runner_count() -> int:
    """Runs of chunks at once in this process: one per slot of the warm pool
    (SANDBOX_POOL_SIZE, or the core count, as the pool sizes itself), so chunks fill
    the pool and no more, however many task threads take chunks side by side."""
    return int(os.environ.get("SANDBOX_POOL_SIZE", "0") or 0) or os.cpu_count() or 1


_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()


def _run_slots() -> threading.BoundedSemaphore:
    """The process's gate on chunk runs: a run past the pool's size would wait for a
    lease anyway, and give up with PoolBusy after the pool's wait (a retry, minutes
    later); here it waits its turn instead."""
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(runner_count())
        return _slots


@dataclass
class ChunkRun:
    """What running a chunk left to do."""

    verification_ids: list[int] = field(default_factory=list)  # the verifications its executions belong to
    unavailable: list[int] = field(default_factory=list)  # the sandbox could not run them: retry later
    held: dict[int, float] = field(default_factory=dict)  # running elsewhere: seconds until that claim is stale
    broken: list[int] = field(default_factory=list)  # raised something else (logged); left to their claim's expiry
    deferred: list[int] = field(default_factory=list)  # not started, giving way to rewards: to send again, in order


def executions_run(
    *, execution_ids: list[int], worker: str | None = None, give_way: Callable[[], bool] | None = None
) -> ChunkRun:
    """Run the executions of a chunk that this call can claim, side by side on
    `runner_count()` threads (each with its own database connection, closed when
    the chunk ends; at most `runner_count()` runs at once in the process), and say
    what is left.

    Steps: run each through `execution_run` (claim, run, record, count), sharing one
    RunContext (each verification read once, a settled mutant cap reused); past the
    first `runner_count()`, start none once `give_way()` says other work waits (those
    left are `deferred`); note the ones the sandbox could not run and any that
    raised; then read which of the chunk's executions are still `running` under a
    claim, which a later look must pick up once that claim turns stale. Finishing
    the verifications is the caller's.
    """
    ids = [int(pk) for pk in execution_ids]
    outcome = ChunkRun()
    if not ids:
        return outcome
    me = worker or worker_name()
    context = RunContext()
    slots = _run_slots()
    always = runner_count()  # the runs a chunk starts whatever waits: it always makes progress
    yielded = threading.Event()

    def one(item: tuple[int, int]) -> None:
        position, execution_id = item
        try:
            with slots:
                if position >= always and give_way is not None and (yielded.is_set() or give_way()):
                    yielded.set()
                    outcome.deferred.append(execution_id)
                    return
                execution_run(execution_id=execution_id, worker=me, context=context)
        except SandboxUnavailable:
            outcome.unavailable.append(execution_id)  # recorded on the row: retried with the chunk's backoff
        except Execution.DoesNotExist:
            log.warning("execution %s is gone (its version was deleted?): nothing to run", execution_id)
        except Exception:
            log.exception("execution %s failed to run; it waits for its claim to turn stale", execution_id)
            outcome.broken.append(execution_id)

    run_on_threads(list(enumerate(ids)), one, workers=min(len(ids), runner_count()))
    outcome.deferred.sort(key=ids.index)
    rows = Execution.objects.filter(pk__in=ids)
    outcome.verification_ids = sorted(set(rows.values_list("verification_id", flat=True)))
    for execution_id in rows.filter(status="running").values_list("pk", flat=True):
        stale_in = execution_claim_stale_in(execution_id=execution_id)
        if stale_in is not None:
            outcome.held[execution_id] = stale_in
    return outcome
