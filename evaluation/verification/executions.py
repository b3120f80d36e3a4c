"""Running one execution of a verification in a sandbox and recording its outcome.

Idempotent: an execution is claimed with a conditional update before it runs (pending,
a sandbox_error being retried, or held past its staleness limit by a worker that died),
and only a running execution takes an outcome, so a redelivered message runs nothing
twice and progress never counts an execution twice.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from threading import Lock
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Q
from django.utils import timezone

from evaluation.models import Execution, Verification
from evaluation.sandbox import engine
from evaluation.sandbox.errors import PoolBusy, SandboxUnavailable
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import FINAL, OUTPUT_KEPT, SETTLED, Status
from evaluation.sandbox.worker_names import worker_name
from evaluation.verification import execution_rows, generated, probes
from evaluation.verification.generated.requests import explore_request
from evaluation.verification.generated.stdio import generated_result
from evaluation.verification.repository import execution_time_limit_s, is_repository
from evaluation.verification.repository.runs import repository_run
from tasks_app.models import TaskVersion

# An execution "running" for longer than its limit plus this was lost with its worker.
STALE_AFTER_S = 120.0


class RunContext:
    """What stays true while one in-process run lasts, shared by its threads: each
    verification with its version (immutable rows), and a mutant's wall-time cap
    once every reference run of its verification has ended (it cannot move then).

    Scoped to one run, never a process-wide cache: a test database that rolls
    back hands the same ids to other rows."""

    def __init__(self) -> None:
        self._lock = Lock()
        self._verifications: dict[int, Verification] = {}
        self._caps: dict[int, float] = {}

    def verification(self, verification_id: int) -> Verification:
        with self._lock:
            found = self._verifications.get(verification_id)
        if found is None:
            found = Verification.objects.select_related("version").get(pk=verification_id)
            with self._lock:
                found = self._verifications.setdefault(verification_id, found)
        return found

    def cap(self, verification_id: int) -> float | None:
        with self._lock:
            return self._caps.get(verification_id)

    def settle_cap(self, verification_id: int, cap: float) -> None:
        with self._lock:
            self._caps[verification_id] = cap


def execution_run(
    *, execution_id: int, worker: str | None = None, backend: str | None = None, context: RunContext | None = None
) -> Execution:
    """Run one execution if nobody else is running it, and record its result.

    Steps: claim it (pending, a sandbox_error being retried, or running past its
    staleness limit: its worker died); build the request from the version and run
    it (a repository task's patch: laid down and judged in a session,
    repository/runs.py); save the result; update the verification's progress.
    Raises SandboxUnavailable when the sandbox could not run it, after recording why.
    """
    now = timezone.now()
    execution = execution_rows.execution_fetch(execution_id)
    execution.verification = (context or RunContext()).verification(execution.verification_id)
    version = execution.verification.version
    stale = now - _claim_lifetime(version)
    if not execution_rows.execution_claim(execution_id, now=now, stale=stale, worker=worker or worker_name()):
        return execution  # done already, or running elsewhere
    if is_repository(version):
        outcome = _repository_outcome(execution, context)
    else:
        outcome = _program_outcome(execution, context, backend)
    outcome["finished_at"] = timezone.now()
    _record(execution, outcome)
    # What this call wrote, without reading the row back (a query per execution saved).
    for name, value in {**outcome, "started_at": now, "worker": worker or worker_name()}.items():
        setattr(execution, name, value)
    execution.attempts += 1
    if outcome["status"] == Status.SANDBOX_ERROR:
        raise SandboxUnavailable(outcome["result"].get("message") or "the sandbox failed")
    return execution


def _program_outcome(execution: Execution, context: RunContext | None, backend: str | None) -> dict[str, Any]:
    """A program's run on the sandbox engine: its request built from the version."""
    config = execution.verification.config or {}
    try:
        if execution.role == generated.ROLE and execution.verification.version.suite_kind == "stdio":
            result = generated_result(execution, backend=backend)  # a few runs of the task's own programs
        else:
            request = (
                explore_request(execution)
                if execution.role == generated.ROLE
                else execution_request(execution, context=context)
            )
            result = engine.run(request, backend=backend or config.get("backend") or None)
    except PoolBusy as exc:
        Execution.objects.filter(pk=execution.pk, status="running").update(status="pending", started_at=None)
        raise SandboxUnavailable(str(exc)) from exc
    payload = result.as_dict()
    for stream in ("stdout", "stderr"):
        payload[stream] = payload[stream][:OUTPUT_KEPT]
    return {
        "status": str(result.status),
        "result": payload,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "request_digest": result.request_digest,  # computed once, where the engine kept the request
    }


def _repository_outcome(execution: Execution, context: RunContext | None) -> dict[str, Any]:
    """A repository task's patch, laid down and judged in a session on this worker; a
    mutant's verdict is cut short as a mutant program's run is (`_wall_cap`)."""
    cap = _wall_cap(execution, context) if execution.role == "mutant" else None
    return repository_run(version=execution.verification.version, code=execution.code, verdict_cap_s=cap)


# Some known-wrong programs run under a shorter wall time, when more time could
# not change what they show:
# - a probe that only sleeps or spins into the timeout tests that a timeout is no pass,
#   which one second shows as well as the task's full limit (other probes get
#   the full limit: a hack that needs time is still a hack);
# - a mutant gets ten times the reference's slowest passing run (at least 1 s, at
#   most the limit), or 5 s while no reference run has finished. A mutant slower
#   than that is counted killed, which the report says.
SLEEP_PROBE_CAP_S = 1.0
MUTANT_CAP_FACTOR = 10.0
MUTANT_CAP_FLOOR_S = 1.0
MUTANT_CAP_UNKNOWN_S = 5.0


def _wall_cap(execution: Execution, context: RunContext | None = None) -> float | None:
    if execution.role == "probe":
        return SLEEP_PROBE_CAP_S if execution.subject in probes.TIMEOUT_PROBES else None
    if execution.role != "mutant":
        return None
    settled = context.cap(execution.verification_id) if context is not None else None
    if settled is not None:
        return settled
    references = Execution.objects.filter(verification_id=execution.verification_id, role="reference")
    found = references.aggregate(
        slowest=Max("wall_s", filter=Q(status="passed")), unfinished=Count("pk", filter=~Q(status__in=SETTLED))
    )
    slowest = found["slowest"]
    cap = MUTANT_CAP_UNKNOWN_S if slowest is None else max(MUTANT_CAP_FLOOR_S, MUTANT_CAP_FACTOR * float(slowest))
    if context is not None and not found["unfinished"]:
        context.settle_cap(execution.verification_id, cap)
    return cap


def execution_request(execution: Execution, *, context: RunContext | None = None) -> Any:
    """The sandbox request of an execution: its program against its version's tests,
    under the version's limits, or the shorter wall time above."""
    version = execution.verification.version
    request = run_request_for(version, execution.code, seed=execution.seed, repeat=execution.repeat)
    cap = _wall_cap(execution, context)
    if cap is None or request.limits.wall_s <= cap:
        return request
    return replace(request, limits=replace(request.limits, wall_s=cap, cpu_s=min(request.limits.cpu_s, cap)))


def _claim_lifetime(version: TaskVersion) -> timedelta:
    """How long a claim holds before another worker may take the execution over."""
    stale_after_s = float(getattr(settings, "VERIFICATION", {}).get("STALE_AFTER_S", STALE_AFTER_S))
    return timedelta(seconds=execution_time_limit_s(version) + stale_after_s)


def execution_claim_stale_in(*, execution_id: int) -> float | None:
    """Seconds until the claim another worker holds on this execution turns stale (it
    may then be claimed again), or None when nobody holds one (done, or free)."""
    execution = Execution.objects.select_related("verification__version").get(pk=execution_id)
    if execution.status != "running" or execution.started_at is None:
        return None
    expires = execution.started_at + _claim_lifetime(execution.verification.version)
    return max(1.0, (expires - timezone.now()).total_seconds())


def _record(execution: Execution, outcome: dict[str, Any]) -> None:
    """Write a run's outcome and count it in its verification's progress, together.

    Only a running execution takes an outcome: when a stale claim was taken over
    and both workers finish, the first to finish is recorded and counted, the
    other's write matches nothing. So progress is an increment that never counts
    an execution twice (a recount per execution cost a scan of the verification's
    rows each time); a sandbox_error is not progress, its retry is.

    Two statements, not one transaction: a worker killed between them leaves the
    figure one short, which the reaper's recount and the finish (done = total)
    put right; the verdict never reads it."""
    written = execution_rows.execution_record(execution.pk, outcome)
    if written and outcome["status"] != "sandbox_error":
        execution_rows.verification_count_done(execution.verification_id)


def verification_recount(verification_id: int) -> None:
    """Set a verification's progress to its executions with a final verdict, counted
    afresh (the reaper's repair of a figure a killed worker left one short: `_record`)."""
    done = (
        Execution.objects.filter(verification_id=verification_id, status__in=FINAL)
        .exclude(status="sandbox_error")
        .count()
    )
    Verification.objects.filter(pk=verification_id).update(done=done)
