"""Verifying a task version: plan its executions, run each in a sandbox, then score,
flag and move the version to verified or flagged.

Every step is idempotent, so a redelivered or repeated message is harmless:
planning finds the existing verification and executions by their keys, an
execution is claimed with a conditional update before it runs, and finishing
is claimed the same way so it happens once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from threading import Lock
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from evaluation.models import Execution, Flag, MutantEquivalence, Verification, VerificationState
from evaluation.sandbox import engine
from evaluation.sandbox.errors import PoolBusy, SandboxUnavailable
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import FINAL, OUTPUT_KEPT, Status
from evaluation.sandbox.worker_names import worker_name
from evaluation.verification import execution_rows, figures, mutants, probes
from evaluation.verification.config import VerifyConfig, code_digest, execution_key
from evaluation.verification.flags import flags_for
from tasks_app.models import State, TaskVersion
from tasks_app.services import task_transition

# An execution "running" for longer than its limit plus this was lost with its worker.
STALE_AFTER_S = 120.0


# -- planning ---------------------------------------------------------------------------------


def _planned(version: TaskVersion, config: VerifyConfig) -> list[dict[str, Any]]:
    """Every execution the configuration asks for, in a stable order."""
    solutions = list(version.solutions.all().order_by("role", "label"))
    items: list[dict[str, Any]] = []
    for solution in solutions:
        for repeat in range(config.repeats):
            items.append(
                {
                    "role": solution.role,
                    "subject": solution.label,
                    "description": solution.note[:300],
                    "code": solution.code,
                    "repeat": repeat,
                    "seed": repeat,
                }
            )
    references = [s for s in solutions if s.role == "reference"]
    if references and config.mutants:
        for mutant in mutants.generate_mutants(references[0].code, seed=config.mutation_seed, limit=config.mutants):
            items.append(
                {
                    "role": "mutant",
                    "subject": mutant.digest,
                    "description": mutant.description[:300],
                    "code": mutant.source,
                    "repeat": 0,
                    "seed": 0,
                }
            )
    if config.probes:
        found = probes.probes_for(
            suite_kind=version.suite_kind,
            entry_point=version.entry_point,
            visible_tests=list(version.visible_tests),
            statement=version.statement,
            starter_code=version.starter_code,
        )
        for probe in found:
            items.append(
                {
                    "role": "probe",
                    "subject": probe.name,
                    "description": probe.description[:300],
                    "code": probe.code,
                    "repeat": 0,
                    "seed": 0,
                }
            )
    return items


def verification_plan(
    *, version: TaskVersion, config: VerifyConfig | None = None, requested_by: Any = None, force: bool = False
) -> tuple[Verification, list[int]]:
    """The verification of `version` under `config` and the ids of the executions
    still to run. An unchanged version under an unchanged configuration is the
    same verification: once done it runs nothing (unless `force`)."""
    config = config or VerifyConfig.from_settings()
    config_hash = config.hash()
    verification = Verification.objects.filter(version=version, config_hash=config_hash).first()
    if verification is None:
        try:
            with transaction.atomic():
                verification = Verification.objects.create(
                    version=version, config_hash=config_hash, config=config.canonical(), requested_by=requested_by
                )
        except IntegrityError:  # planned at the same moment elsewhere
            verification = Verification.objects.get(version=version, config_hash=config_hash)
    if verification.state == VerificationState.DONE and not force:
        return verification, []
    rows = [
        Execution(
            verification=verification,
            key=execution_key(
                version_hash=version.content_hash,
                solution_digest=code_digest(item["code"]),
                repeat=item["repeat"],
                config_hash=config_hash,
            ),
            solution_digest=code_digest(item["code"]),
            **item,
        )
        for item in _planned(version, config)
    ]
    Execution.objects.bulk_create(rows, ignore_conflicts=True)  # the key makes a replan a no-op
    if force:
        verification.executions.update(status="pending", result=None, started_at=None, finished_at=None)
        Flag.objects.filter(verification=verification).delete()
    total = verification.executions.count()
    deadline = timezone.now() + timedelta(seconds=_deadline_s(version, total))
    Verification.objects.filter(pk=verification.pk).update(
        total=total,
        state=VerificationState.RUNNING,
        started_at=timezone.now(),
        deadline_at=deadline,
        finished_at=None,
        **({"verdict": "", "summary": None, "done": 0} if force else {}),
    )
    verification.refresh_from_db()
    return verification, _todo(verification)


# References run first: a mutant's wall-time cap is ten times the reference's
# slowest run, which must be known by then. Probes before mutants: a hack is the
# most important thing a verification can find.
RUN_ORDER = {"reference": 0, "adversarial": 1, "probe": 2, "mutant": 3}


def _todo(verification: Verification) -> list[int]:
    """Its executions still to run (pending, claimed by a dead worker, or failed by
    the sandbox), in RUN_ORDER."""
    rows = verification.executions.exclude(status__in=FINAL[:-1]).values_list("role", "pk")
    return [pk for _, pk in sorted(rows, key=lambda row: (RUN_ORDER[row[0]], row[1]))]


def _deadline_s(version: TaskVersion, total: int) -> float:
    """Long enough for every execution to run one after another, with room to spare."""
    return 600.0 + total * (float(version.time_limit_s) + 5.0)


# -- running ----------------------------------------------------------------------------------


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
    staleness limit: its worker died); build the request from the version; run
    it; save the result; update the verification's progress. Raises
    SandboxUnavailable when the sandbox could not run it, after recording why.
    """
    now = timezone.now()
    execution = execution_rows.execution_fetch(execution_id)
    execution.verification = (context or RunContext()).verification(execution.verification_id)
    version = execution.verification.version
    stale = now - _claim_lifetime(version)
    if not execution_rows.execution_claim(execution_id, now=now, stale=stale, worker=worker or worker_name()):
        return execution  # done already, or running elsewhere
    request = execution_request(execution, context=context)
    config = execution.verification.config or {}
    try:
        result = engine.run(request, backend=backend or config.get("backend") or None)
    except PoolBusy as exc:
        Execution.objects.filter(pk=execution_id, status="running").update(status="pending", started_at=None)
        raise SandboxUnavailable(str(exc)) from exc
    payload = result.as_dict()
    for stream in ("stdout", "stderr"):
        payload[stream] = payload[stream][:OUTPUT_KEPT]
    outcome = {
        "status": str(result.status),
        "result": payload,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "request_digest": result.request_digest,  # computed once, where the engine kept the request
        "finished_at": timezone.now(),
    }
    _record(execution, outcome)
    # What this call wrote, without reading the row back (a query per execution saved).
    for name, value in {**outcome, "started_at": now, "worker": worker or worker_name()}.items():
        setattr(execution, name, value)
    execution.attempts += 1
    if result.status == Status.SANDBOX_ERROR:
        raise SandboxUnavailable(result.message or "the sandbox failed")
    return execution


# Some known-wrong programs run under a shorter wall time, when more time could
# not change what they show:
# - a probe that only sleeps into the timeout tests that a timeout is no pass,
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
        slowest=Max("wall_s", filter=Q(status="passed")), unfinished=Count("pk", filter=~Q(status__in=FINAL[:-1]))
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
    return timedelta(seconds=float(version.time_limit_s) + stale_after_s)


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


def _recount_progress(verification_id: int) -> None:
    done = (
        Execution.objects.filter(verification_id=verification_id, status__in=FINAL)
        .exclude(status="sandbox_error")
        .count()
    )
    Verification.objects.filter(pk=verification_id).update(done=done)


# -- finishing --------------------------------------------------------------------------------


def outcomes_of(verification: Verification) -> list[figures.Outcome]:
    equivalent = set(
        MutantEquivalence.objects.filter(task_id=verification.version.task_id).values_list("mutant_digest", flat=True)
    )
    return [
        figures.Outcome(
            role=role,
            subject=subject,
            repeat=repeat,
            status=status,
            wall_s=wall_s or 0.0,
            equivalent=role == "mutant" and subject in equivalent,
        )
        for role, subject, repeat, status, wall_s in verification.executions.values_list(
            "role", "subject", "repeat", "status", "wall_s"
        )
    ]


def broken_setup(verification: Verification) -> dict[str, Any] | None:
    """Whether the suite's setup raised with a reference solution (the judge's
    setup_error): then the task is broken, whatever the solutions do. Such a run is
    `failed`, not `sandbox_error`, so it is never retried as the platform's fault.
    {"runs", "reference_runs", "traceback"} (the first traceback), or None."""
    results = list(verification.executions.filter(role="reference").values_list("result", flat=True))
    tracebacks = [r["setup_error"] for r in results if isinstance(r, dict) and r.get("setup_error")]
    if not tracebacks:
        return None
    return {"runs": len(tracebacks), "reference_runs": len(results), "traceback": str(tracebacks[0])[:4000]}


def verification_finish(*, verification_id: int) -> Verification:
    """Score, flag and decide, once every execution has a final status.

    An execution left with sandbox_error makes the verification an
    infrastructure error (retried later), never a flag on the task. One finished
    already (by another worker, or before its task was submitted: submitting plans
    the same verification, which runs nothing and lands here) decides a task still
    waiting for it by its recorded verdict (`_decide_again`)."""
    verification = Verification.objects.select_related("version__task").get(pk=verification_id)
    if verification.state == VerificationState.DONE:
        _decide_again(verification)
        return verification
    counts = dict(verification.executions.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    if counts.get("pending") or counts.get("running"):
        return verification
    if counts.get("sandbox_error"):
        Verification.objects.filter(pk=verification_id).exclude(state=VerificationState.DONE).update(
            state=VerificationState.INFRASTRUCTURE_ERROR
        )
        verification.refresh_from_db()
        return verification
    version = verification.version
    summary = figures.summarise(outcomes_of(verification), time_limit_s=float(version.time_limit_s))
    summary["broken_setup"] = broken_setup(verification)
    found = flags_for(summary, version=version)
    verdict = "flagged" if any(flag.severity == "error" for flag in found) else "verified"
    with transaction.atomic():
        claimed = (
            Verification.objects.filter(pk=verification_id)
            .exclude(state=VerificationState.DONE)
            .update(
                state=VerificationState.DONE,
                summary=summary,
                verdict=verdict,
                finished_at=timezone.now(),
                done=F("total"),
            )
        )
        if not claimed:  # finished by another worker meanwhile, which decided
            verification.refresh_from_db()
            _decide_again(verification)
            return verification
        Flag.objects.filter(verification_id=verification_id).delete()
        Flag.objects.bulk_create(
            Flag(
                verification_id=verification_id, code=f.code, severity=f.severity, message=f.message, details=f.details
            )
            for f in found
        )
        _decide(version, verdict)
    verification.refresh_from_db()
    return verification


def _decide(version: TaskVersion, verdict: str) -> None:
    """Move the task, if this version is still the one waiting for a verdict."""
    task = version.task
    task.refresh_from_db()
    if task.state != State.SUBMITTED or task.latest_version_id != version.pk:
        return  # withdrawn, edited or decided meanwhile: the verdict is kept on the version only
    note = "verification found no blocking problem" if verdict == "verified" else "verification raised flags"
    task_transition(
        actor=None, task=task, to_state=State.VERIFIED if verdict == "verified" else State.FLAGGED, note=note
    )


def _decide_again(verification: Verification) -> None:
    """Decide by a finished verification's recorded verdict, as when it finished, if
    it is of the current configuration (the one a submitted version waits for).
    A no-op for a task that is not waiting (`_decide`), so as often as it is called."""
    if verification.state != VerificationState.DONE or not verification.verdict:
        return
    if verification.config_hash != VerifyConfig.from_settings().hash():
        return  # an older or a custom configuration: the task waits for the current one
    _decide(verification.version, verification.verdict)


def verification_verdict_apply(*, version_id: int) -> bool:
    """Move a submitted task at once by the verdict its version already has under the
    current configuration (verified, then submitted), as a verification finishing
    now would: to verified or flagged by its flags. Returns whether there was one
    (False: a verification has to run)."""
    found = (
        Verification.objects.filter(
            version_id=version_id, config_hash=VerifyConfig.from_settings().hash(), state=VerificationState.DONE
        )
        .select_related("version__task")
        .first()
    )
    if found is None or not found.verdict:
        return False
    _decide(found.version, found.verdict)
    return True


# -- the whole thing, in-process (manage.py verify --sync, the audit, tests) -------------------------


def verifications_run(
    *,
    versions: list[TaskVersion],
    config: VerifyConfig | None = None,
    workers: int = 2,
    force: bool = False,
    requested_by: Any = None,
    progress: Any = None,
    timings: dict[str, float] | None = None,
) -> list[int]:
    """Verify `versions` in this process, without a broker.

    Steps: plan every version (one already verified under `config` plans nothing,
    unless `force`); run every execution still to run on `workers` threads, all
    references first (RUN_ORDER), each thread closing its own database connection;
    finish every verification. Returns the verification ids in the order of
    `versions`; `progress(done, total)` is called as executions end, and `timings`
    receives the seconds each step took (plan_s, run_s, finish_s).
    """
    import time

    from evaluation.verification.threads import run_on_threads

    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        clock.append(time.perf_counter())
        if timings is not None:
            timings[name] = clock[-1] - clock[-2]

    planned = [verification_plan(version=v, config=config, requested_by=requested_by, force=force) for v in versions]
    ranked = Execution.objects.filter(pk__in=[pk for _, ids in planned for pk in ids]).values_list("role", "pk")
    todo = [pk for _, pk in sorted(ranked, key=lambda row: (RUN_ORDER[row[0]], row[1]))]
    lap("plan_s")

    context = RunContext()

    def one(execution_id: int) -> None:
        try:
            execution_run(execution_id=execution_id, context=context)
        except SandboxUnavailable:
            pass  # recorded on the execution: finishing reports the infrastructure error

    run_on_threads(todo, one, workers=workers, progress=progress)
    lap("run_s")
    ids = [verification.pk for verification, _ in planned]
    for verification_id in ids:
        verification_finish(verification_id=verification_id)
    lap("finish_s")
    return ids


def verification_run_inline(
    *, version: TaskVersion, config: VerifyConfig | None = None, workers: int = 2, force: bool = False
) -> Verification:
    """One version through the whole pipeline in this process (tests, the CLI)."""
    (verification_id,) = verifications_run(versions=[version], config=config, workers=workers, force=force)
    return Verification.objects.get(pk=verification_id)


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
    from django.db.models import Exists, OuterRef

    from tasks_app.models import Task

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
    from django.db.models import Exists, OuterRef

    from tasks_app.models import Task

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
        todo = _todo(verification)
        _recount_progress(verification.pk)
        Verification.objects.filter(pk=verification.pk).update(
            deadline_at=now + timedelta(seconds=_deadline_s(verification.version, len(todo) or 1))
        )
        resumed.append((verification.pk, todo))
    return resumed
