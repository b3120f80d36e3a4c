"""Celery tasks of the verification pipeline: thin wrappers around the services.

Executions go to the `sandbox` queue (workers on machines with sandboxes), one
message per chunk of VERIFICATION["CHUNK"] executions (one each by default with
Redis, several on the embedded filesystem broker: evaluation/verification/execution_chunks.py);
planning and finishing go to the default queue. Every task is idempotent, and
acks late: a worker killed mid-run leaves its message to be delivered again.
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.contrib.auth import get_user_model

from evaluation.difficulty.fits import difficulty_fit_create
from evaluation.difficulty.rollouts import attempt_run, upload_finish
from evaluation.models import Execution, Verification
from evaluation.queues import queued_messages, urgent_work_waiting
from evaluation.sandbox.errors import SandboxUnavailable
from evaluation.verification.config import VerifyConfig
from evaluation.verification.execution_chunks import chunk_size_for, execution_chunks, executions_run
from evaluation.verification.executions import execution_claim_stale_in, execution_run
from evaluation.verification.finishing import verification_finish, verification_verdict_apply
from evaluation.verification.planning import verification_plan
from evaluation.verification.reaper import verifications_reap, versions_unplanned, versions_verdict_unapplied
from evaluation.verification.repository import execution_time_limit_s
from tasks_app.models import TaskVersion

SANDBOX_QUEUE = "sandbox"
# A run in a sandbox: acked late (a killed worker's message is delivered again),
# retried with backoff and jitter only when the sandbox itself failed.
SANDBOX_RUN = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (SandboxUnavailable,),
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 8,
}

log = logging.getLogger(__name__)
# A sandbox backend missing from a worker (bwrap not installed, the Docker engine or its
# image gone) fails every run at once: retrying within seconds, as the backoff starts,
# only floods the log (44 lines in 30 s). Its runs wait longer before each try instead
# (30 s, doubling up to the longest backoff; an engine restarting is back by then), still
# at most max_retries tries (the reaper resumes the verification later); the worker says
# why once every BACKEND_MISSING_LOG_S, and /healthz says so too.
BACKEND_MISSING_FIRST_WAIT_S = 30
BACKEND_MISSING_LOG_S = 300.0


def backend_missing_wait_s(retries: int) -> int:
    """Seconds a run whose backend is missing waits before its try number `retries + 1`."""
    return int(min(SANDBOX_RUN["retry_backoff_max"], BACKEND_MISSING_FIRST_WAIT_S * 2 ** min(retries, 10)))


_missing_said: dict[str, float] = {}


@shared_task(name="evaluation.verify_version", acks_late=True, reject_on_worker_lost=True)
def verify_version(version_id: int, force: bool = False, requested_by_id: int | None = None) -> int:
    """Plan a version's verification and fan its executions out to the sandbox queue."""
    version = TaskVersion.objects.get(pk=version_id)
    requested_by = get_user_model().objects.filter(pk=requested_by_id).first() if requested_by_id else None
    verification, todo = verification_plan(
        version=version, config=VerifyConfig.from_settings(), force=force, requested_by=requested_by
    )
    enqueue_executions(verification.pk, todo)
    return verification.pk


# After an enqueue failed, the next ones in this many seconds are not tried: a bulk
# submit while the broker is down costs one failed publish (about a second of
# retries), not one each. The reaper sends what was skipped.
ENQUEUE_BACKOFF_S = 30.0
_enqueue_failed_at: float | None = None


def enqueue_verification(version_id: int, *, requested_by_id: int | None = None) -> bool:
    """Send a submitted version's verify_version; False when the broker refused it.

    The submission has committed by now and stays: a task in `submitted` whose
    version has no verification planned is the durable record of the work, which
    the beat's reaper finds and asks for again (versions_unplanned, after
    VERIFICATION STALL_AFTER_S). So a broker that is down or unreachable fails no
    submit (and no other task of a bulk submit): it only delays the verification."""
    global _enqueue_failed_at
    if _enqueue_failed_at is not None and time.monotonic() - _enqueue_failed_at < ENQUEUE_BACKOFF_S:
        log.warning("verification of version %s not enqueued (the broker failed just now): the reaper will", version_id)
        return False
    try:
        verify_version.delay(version_id, requested_by_id=requested_by_id)
    except Exception as exc:  # kombu's OperationalError, a timeout, a refused connection
        _enqueue_failed_at = time.monotonic()
        log.warning("verification of version %s not enqueued, the reaper will: %s", version_id, exc)
        return False
    _enqueue_failed_at = None
    return True


def enqueue_executions(verification_id: int, execution_ids: list[int]) -> int:
    """Send a verification's executions to the sandbox queue in chunks (a chunk of one
    as `run_execution`, as before chunks existed); returns how many messages."""
    if not execution_ids:
        finish_verification.delay(verification_id)
        return 1
    version = Verification.objects.select_related("version").get(pk=verification_id).version
    chunks = execution_chunks(execution_ids, size=chunk_size_for(time_limit_s=execution_time_limit_s(version)))
    for chunk in chunks:
        send_chunk(chunk)
    return len(chunks)


def send_chunk(execution_ids: list[int], *, countdown: float | None = None) -> None:
    if len(execution_ids) == 1:
        run_execution.apply_async((execution_ids[0],), queue=SANDBOX_QUEUE, countdown=countdown)
    else:
        run_executions.apply_async((list(execution_ids),), queue=SANDBOX_QUEUE, countdown=countdown)


@shared_task(name="evaluation.run_executions", **SANDBOX_RUN)
def run_executions(self, execution_ids: list[int]) -> str:
    """Run a chunk of executions side by side; finish their verifications once.

    What the chunk could not run goes out again: executions another worker holds,
    once that claim would be stale (this message may be the only one left for them:
    the redelivery of a worker that died mid-run); executions the sandbox could not
    run, as this message's retry with backoff (only those); executions it left to
    give way to reward work, at once, to the back of the queue."""
    outcome = executions_run(
        execution_ids=execution_ids, worker=self.request.hostname or None, give_way=urgent_work_waiting
    )
    for verification_id in outcome.verification_ids:
        # After a sandbox failure too: the verification shows "infrastructure error" while it waits.
        verification_finish(verification_id=verification_id)
    if outcome.deferred:
        send_chunk(outcome.deferred)
    if outcome.held:
        send_chunk(sorted(outcome.held), countdown=max(outcome.held.values()))
    if outcome.unavailable:
        countdown = get_exponential_backoff_interval(
            factor=int(SANDBOX_RUN["retry_backoff"]), retries=self.request.retries,
            maximum=int(SANDBOX_RUN["retry_backoff_max"]), full_jitter=True,
        )  # fmt: skip
        raise self.retry(
            args=(sorted(outcome.unavailable),),
            exc=SandboxUnavailable(f"the sandbox could not run executions {sorted(outcome.unavailable)}"),
            countdown=countdown,
        )
    held = f", {len(outcome.held)} held elsewhere" if outcome.held else ""
    deferred = f", {len(outcome.deferred)} sent again behind reward work" if outcome.deferred else ""
    return f"{len(execution_ids) - len(outcome.deferred)} executions{held}{deferred}"


@shared_task(name="evaluation.run_execution", **SANDBOX_RUN)
def run_execution(self, execution_id: int) -> str:
    """Run one execution; retried with backoff only when the sandbox failed."""
    try:
        execution = execution_run(execution_id=execution_id, worker=self.request.hostname or None)
    except SandboxUnavailable as exc:
        failed = Execution.objects.only("verification_id", "result").get(pk=execution_id)
        # Let the verification show "infrastructure error" while this waits for its retry.
        verification_finish(verification_id=failed.verification_id)
        if (failed.result or {}).get("anomaly") == "backend_missing":
            _say_backend_missing(failed.result)
            raise self.retry(exc=exc, countdown=backend_missing_wait_s(self.request.retries)) from exc
        raise
    stale_in = execution_claim_stale_in(execution_id=execution_id)
    if stale_in is not None:
        # Another worker holds it. This message may be the only one left for it (the
        # redelivery of a worker that died mid-run), so look again once that claim
        # would be stale rather than drop it; if the holder finishes, that look is a no-op.
        run_execution.apply_async((execution_id,), queue=SANDBOX_QUEUE, countdown=stale_in)
        return f"claimed elsewhere: again in {stale_in:.0f} s"
    verification = verification_finish(verification_id=execution.verification_id)
    return f"{execution.status} ({verification.state} {verification.done}/{verification.total})"


def _say_backend_missing(result: dict) -> None:
    backend = str(result.get("backend") or "?")
    now = time.monotonic()
    if now - _missing_said.get(backend, -BACKEND_MISSING_LOG_S) < BACKEND_MISSING_LOG_S:
        return
    _missing_said[backend] = now
    log.error(
        "the %s sandbox backend is missing on this worker (%s): every run here fails at once, so each waits "
        "%d s or more before its next try (at most %d tries); install it (make run does: "
        "platform/scripts/ensure-sandbox.sh) or set SANDBOX_BACKEND. /healthz shows the same. Said again in %.0f s "
        "at the earliest.",
        backend, result.get("message", ""), BACKEND_MISSING_FIRST_WAIT_S, SANDBOX_RUN["max_retries"],
        BACKEND_MISSING_LOG_S,
    )  # fmt: skip


@shared_task(name="evaluation.finish_verification", acks_late=True)
def finish_verification(verification_id: int) -> str:
    return verification_finish(verification_id=verification_id).state


@shared_task(name="evaluation.reap_verifications")
def reap_verifications() -> int:
    """Periodic (beat): resume verifications stuck past their deadline, or stalled
    while the sandbox queue is empty (their messages were lost); ask again for
    those never planned while the queue verify_version waits on is empty; and move
    submitted tasks whose verification is done already."""
    waiting = queued_messages(SANDBOX_QUEUE)
    resumed = verifications_reap(queue_idle=waiting == 0)
    if resumed:
        log.warning("resumed %d stuck verifications (sandbox queue: %s messages): %s", len(resumed), waiting,
                    [verification_id for verification_id, _ in resumed])  # fmt: skip
    else:
        log.info("no verification to resume (sandbox queue: %s messages)", waiting)
    for verification_id, todo in resumed:
        enqueue_executions(verification_id, todo)
    # A verify_version message waiting behind a bulk submit is a backlog, not a loss.
    unplanned = versions_unplanned() if queued_messages(_default_queue()) == 0 else []
    if unplanned:
        log.warning("asking again for %d verifications never planned: versions %s", len(unplanned), unplanned)
    for version_id in unplanned:
        verify_version.delay(version_id)
    undecided = versions_verdict_unapplied()
    if undecided:
        log.warning("deciding %d submitted versions by their finished verification: %s", len(undecided), undecided)
    for version_id in undecided:
        verification_verdict_apply(version_id=version_id)
    return len(resumed) + len(unplanned) + len(undecided)


def _default_queue() -> str:
    return str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", None) or "celery")


# -- rollouts and difficulty ---------------------------------------------------------------


def enqueue_attempts(upload_id: int, attempt_ids: list[int]) -> None:
    if not attempt_ids:
        finish_upload.delay(upload_id)
        return
    for attempt_id in attempt_ids:
        run_attempt.apply_async((attempt_id,), queue=SANDBOX_QUEUE)


@shared_task(name="evaluation.reap_sessions")
def reap_sessions() -> dict[str, int]:
    """Session rows whose lease passed, checked against their host agent (a socket host
    only: an embedded host reaps and records its own sessions in its web process)."""
    from django.conf import settings

    from evaluation.verification.sessions.services import sessions_reap

    if not settings.SESSIONS["AGENT_SOCKET"]:
        return {"expired": 0, "failed": 0}
    return sessions_reap()


@shared_task(name="evaluation.run_attempt", **SANDBOX_RUN)
def run_attempt(self, attempt_id: int) -> str:
    """Run one solver attempt; retried with backoff only when the sandbox failed."""
    attempt = attempt_run(attempt_id=attempt_id, worker=self.request.hostname or None)
    if attempt.upload_id is not None and upload_finish(upload_id=attempt.upload_id):
        fit_difficulty.delay()
    return attempt.status


@shared_task(name="evaluation.finish_upload", acks_late=True)
def finish_upload(upload_id: int) -> bool:
    finished = upload_finish(upload_id=upload_id)
    if finished:
        fit_difficulty.delay()
    return finished


@shared_task(name="evaluation.fit_difficulty", acks_late=True)
def fit_difficulty(bootstrap: int | None = None) -> int:
    """Refit difficulty over every counted attempt (after new rollouts, or on demand)."""
    from django.conf import settings

    options = getattr(settings, "DIFFICULTY", {})
    return difficulty_fit_create(
        regularisation=float(options.get("REGULARISATION", 1.0)),
        bootstrap=int(options.get("BOOTSTRAP", 100) if bootstrap is None else bootstrap),
        seed=int(options.get("SEED", 0)),
    ).pk
