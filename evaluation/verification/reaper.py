"""Finding lost verification work for the beat's reaper (evaluation.tasks.reap_verifications):
verifications stuck or stalled, submitted versions never planned, and finished
verifications whose verdict never moved their task."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from evaluation.models import Execution, Verification, VerificationState
from evaluation.verification.config import VerifyConfig
from evaluation.verification.executions import verification_recount
from evaluation.verification.planning import verification_deadline_s, verification_todo
from tasks_app.models import State, Task

UNPLANNED_RESENT_AT_ONCE = 500


def versions_unplanned(*, now: Any = None) -> list[int]:
    """Submitted versions whose verification was never planned, for the reaper to ask
    for again: the task has sat in `submitted` for VERIFICATION STALL_AFTER_S with no
    verification under the current configuration past `queued`. Its verify_version
    message was lost (a broker that came back empty, a worker that died with it)
    before any row recorded the work, so nothing else would ever resume it. Only
    where submitting starts a verification (VERIFICATION ON_SUBMIT); at most
    UNPLANNED_RESENT_AT_ONCE a sweep. Planning again is harmless: it finds the rows a
    plan made and runs only what is left."""
    if not settings.VERIFICATION.get("ON_SUBMIT", True):
        return []
    now = now or timezone.now()
    quiet_since = now - timedelta(seconds=float(settings.VERIFICATION["STALL_AFTER_S"]))
    planned = Verification.objects.filter(
        version_id=OuterRef("latest_version_id"), config_hash=VerifyConfig.from_settings().hash()
    ).exclude(state=VerificationState.QUEUED)
    waiting = Task.objects.filter(state=State.SUBMITTED, updated_at__lt=quiet_since, latest_version__isnull=False)
    ids = waiting.exclude(Exists(planned)).order_by("updated_at").values_list("latest_version_id", flat=True)
    return list(ids[:UNPLANNED_RESENT_AT_ONCE])


def versions_verdict_unapplied() -> list[int]:
    """Latest versions of submitted tasks whose verification under the current
    configuration is done: submitting, or the finish, should have moved their task
    (verification_verdict_apply); the reaper applies the verdict of any it finds."""
    done = Verification.objects.filter(
        version_id=OuterRef("latest_version_id"),
        config_hash=VerifyConfig.from_settings().hash(),
        state=VerificationState.DONE,
    )
    waiting = Task.objects.filter(state=State.SUBMITTED, latest_version__isnull=False).filter(Exists(done))
    return list(waiting.order_by("updated_at").values_list("latest_version_id", flat=True)[:UNPLANNED_RESENT_AT_ONCE])


def verifications_reap(*, now: Any = None, queue_idle: bool = False) -> list[tuple[int, list[int]]]:
    """Verifications to resume: give each a new deadline and return the executions to
    enqueue again (pending, claimed by a dead worker, or failed by the sandbox).

    Steps:
    1. Those past their deadline, still running or waiting on sandbox errors whose
       retries ran out.
    2. When `queue_idle` (the caller found the sandbox queue empty): also those still
       running with no execution started or finished for VERIFICATION STALL_AFTER_S.
       Work waits, nothing would deliver it: the broker lost its messages (a Redis
       restarted without its data). With messages queued, no progress is a backlog,
       not a loss, and nothing is resent. A resent execution that another message
       already ran is refused by its claim, so a wrong guess costs a no-op.
    """
    now = now or timezone.now()
    stuck = Verification.objects.filter(
        state__in=(VerificationState.RUNNING, VerificationState.INFRASTRUCTURE_ERROR), deadline_at__lt=now
    )
    chosen = {v.pk: v for v in stuck}
    if queue_idle:
        quiet_since = now - timedelta(seconds=float(settings.VERIFICATION["STALL_AFTER_S"]))
        running = Verification.objects.filter(state=VerificationState.RUNNING, started_at__lt=quiet_since)
        moved = Execution.objects.filter(verification__in=running).filter(
            Q(started_at__gte=quiet_since) | Q(finished_at__gte=quiet_since)
        )
        for verification in running.exclude(pk__in=moved.values("verification_id")).exclude(pk__in=list(chosen)):
            chosen[verification.pk] = verification
    resumed = []
    for verification in chosen.values():
        todo = verification_todo(verification)
        verification_recount(verification.pk)
        Verification.objects.filter(pk=verification.pk).update(
            deadline_at=now + timedelta(seconds=verification_deadline_s(verification.version, len(todo) or 1))
        )
        resumed.append((verification.pk, todo))
    return resumed
