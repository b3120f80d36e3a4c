"""Training jobs: registered against a snapshot, given a token bound to it, and fed
back with the job's metrics and rollouts (which count toward difficulty).

Who reads what: curators, reviewers and admins read every snapshot. A trainer
reads a snapshot only through a job: its job's token reads that job's snapshot
and nothing else, and a trainer signed in reads the snapshots of jobs they
registered.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from evaluation import dispatch
from evaluation.models import AgentSession, Attempt, Solver
from tasks_app.errors import InvalidTransition, NotFound, PermissionDenied, ValidationFailed
from tasks_app.models import ApiToken
from tasks_app.roles import CURATOR, REVIEWER, has_role
from tasks_app.services.tokens import api_token_create
from trainer_bridge.models import REWARD_MODES, JobMetric, Snapshot, SnapshotMember, TrainingJob
from trainer_bridge.services import reward_rows

SESSION_ID = re.compile(r"[0-9a-f]{32}")
JOB_SCOPES = ["job", "export", "reward", "session"]  # no "read"/"write": a job token reaches nothing else
MAX_METRICS = 1000  # entries per post
MAX_ROLLOUTS = 10000
# A failed job may run again: the trainer resumes it from its last checkpoint.
_NEXT_STATES = {"registered": {"running", "finished", "failed"}, "running": {"finished", "failed"},
                "failed": {"running"}}  # fmt: skip


@dataclass(frozen=True)
class RegisteredJob:
    job: TrainingJob
    secret: str  # the job token's secret: shown once


def job_of_token(token: Any) -> TrainingJob | None:
    """The job a token is bound to, if it is a job's token, with its snapshot and the
    snapshot's pool; kept on the token for the rest of the request."""
    if not isinstance(token, ApiToken) or "job" not in token.scopes:
        return None  # only a job's own token holds the `job` scope: no query for the others
    if "_job" not in token.__dict__:
        token._job = reward_rows.job_with_snapshot_by_token(token.pk)
    return token._job


def readable_snapshot_ids(*, user: Any, token: Any, snapshots: list[Snapshot]) -> set[int]:
    """Which of `snapshots` this caller may read (the rule of the module docstring), in
    at most one query for the whole list."""
    ids = {s.pk for s in snapshots}
    job = job_of_token(token)
    if job is not None:
        return ids & {job.snapshot_id}
    if has_role(user, CURATOR, REVIEWER):
        return ids
    return set(TrainingJob.objects.filter(created_by=user, snapshot_id__in=ids).values_list("snapshot_id", flat=True))


def can_read_snapshot(*, user: Any, token: Any, snapshot: Snapshot) -> bool:
    return snapshot.pk in readable_snapshot_ids(user=user, token=token, snapshots=[snapshot])


def job_register(
    *,
    user: Any,
    name: str,
    snapshot_hash: str,
    reward_mode: str = "binary",
    solver: str | None = None,
    with_hidden_tests: bool = False,
    may_read_hidden: bool = False,
    steps_total: int | None = None,
    config: dict[str, Any] | None = None,
    expires_in_days: int | None = None,
) -> RegisteredJob:
    """Register a job and make its token (scopes JOB_SCOPES, plus export:tests when
    asked for by someone who holds it)."""
    errors: dict[str, list[str]] = {}
    if not isinstance(name, str) or not name.strip() or len(name) > 120 or not name.isprintable():
        errors["name"] = ["1-120 printable characters."]
    snapshot = Snapshot.objects.filter(hash=snapshot_hash).first() if isinstance(snapshot_hash, str) else None
    if snapshot is None:
        errors["snapshot"] = [f"No snapshot with hash {str(snapshot_hash)[:64]!r}."]
    if reward_mode not in REWARD_MODES:
        errors["reward_mode"] = [f"One of: {', '.join(REWARD_MODES)}."]
    if solver is not None and (not isinstance(solver, str) or not solver.strip() or len(solver) > 120
                               or not solver.isprintable()):  # fmt: skip
        errors["solver"] = ["1-120 printable characters: the name its rollouts count under."]
    if steps_total is not None and (not isinstance(steps_total, int) or isinstance(steps_total, bool)
                                    or steps_total < 1):  # fmt: skip
        errors["steps_total"] = ["A whole number of at least 1."]
    if config is not None and not isinstance(config, dict):
        errors["config"] = ["An object."]
    if expires_in_days is not None and (not isinstance(expires_in_days, int) or not 1 <= expires_in_days <= 365):
        errors["expires_in_days"] = ["A whole number of days from 1 to 365."]
    if errors:
        raise ValidationFailed.naming(errors)
    if with_hidden_tests and not may_read_hidden:
        raise PermissionDenied(
            "A job token with hidden tests needs a caller that holds the export:tests scope.",
            details={"with_hidden_tests": ["Not allowed for this caller."]},
        )
    expires = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    with transaction.atomic():
        job = TrainingJob.objects.create(name=name.strip(), snapshot=snapshot, reward_mode=reward_mode,
                                         solver=(solver or "").strip(), config=config or {},
                                         steps_total=steps_total, created_by=user)  # fmt: skip
        if not job.solver:
            job.solver = f"job-{job.pk}-{job.name}"[:120]
        scopes = JOB_SCOPES + (["export:tests"] if with_hidden_tests else [])
        issued = api_token_create(user=user, name=f"job {job.pk}: {job.name}"[:100], scopes=scopes, expires_at=expires)
        job.token = issued.token
        job.save(update_fields=["solver", "token"])
    return RegisteredJob(job=job, secret=issued.secret)


def session_version_allowed(*, token: Any, version_hash: str) -> str | None:
    """Why this token may not hold a session on `version_hash`, or None when it may: a
    job's token reaches its own snapshot's tasks only, as for rewards. (The sessions
    API, one app below, asks through settings.SESSIONS["VERSION_GUARD"].)"""
    job = job_of_token(token)
    if job is None:
        return None
    if not SnapshotMember.objects.filter(snapshot=job.snapshot, content_hash=version_hash).exists():
        return f"version {version_hash[:12]} is not in this job's snapshot {job.snapshot.hash[:12]}"
    return None


def job_episodes(job: TrainingJob, *, limit: int = 100) -> list[dict[str, Any]]:
    """The job's latest agentic episodes: each rollout that names its session, with the
    session's reward and state, for the job page to link to the transcript."""
    attempts = list(Attempt.objects.filter(solver__name=job.solver, result__has_key="session")
                    .select_related("task", "version").order_by("-created_at")[:limit])  # fmt: skip
    sessions = AgentSession.objects.in_bulk([a.result["session"] for a in attempts])
    return [{"attempt": a, "session": sessions.get(a.result["session"]), "session_id": a.result["session"],
             "reward": a.result.get("reward")} for a in attempts]  # fmt: skip


def job_get(*, job_id: Any, user: Any, token: Any) -> TrainingJob:
    """A job the caller may see (jobs_visible); any other is not found."""
    try:
        job = jobs_visible(user=user, token=token).filter(pk=int(job_id)).first()
    except (TypeError, ValueError):
        job = None
    if job is None:
        raise NotFound(f"No training job {str(job_id)[:20]!r} that you can see.")
    return job


def jobs_visible(*, user: Any, token: Any) -> Any:
    """The jobs the caller may see: its own token's, those they registered, or all for
    curators and reviewers."""
    bound = job_of_token(token)
    jobs = TrainingJob.objects.select_related("snapshot", "snapshot__pool", "created_by")
    if bound is not None:
        return jobs.filter(pk=bound.pk)
    if has_role(user, CURATOR, REVIEWER):
        return jobs
    return jobs.filter(created_by=user)


def job_writable(*, job: TrainingJob, user: Any, token: Any) -> None:
    """Only the job's own token, or whoever registered it, posts to it."""
    bound = job_of_token(token)
    if bound is not None and bound.pk != job.pk:
        raise PermissionDenied("This token belongs to another training job.")
    if bound is None and job.created_by_id != user.pk:
        raise PermissionDenied("Only the job's token or whoever registered it posts to a job.")


def job_set_state(*, job: TrainingJob, state: str) -> TrainingJob:
    if state == job.state:
        return job
    if state not in _NEXT_STATES.get(job.state, set()):
        allowed = sorted(_NEXT_STATES.get(job.state, []))
        raise InvalidTransition(f"A {job.state} job cannot become {state!r}.",
                                details={"state": [f"From {job.state}: {allowed}."]})  # fmt: skip
    job.state = state
    job.finished_at = timezone.now() if state in ("finished", "failed") else None
    job.save(update_fields=["state", "finished_at", "updated_at"])
    return job


def metrics_post(*, job: TrainingJob, entries: Any) -> int:
    """Store per-step metrics ({step, values: {name: number}}); a step posted again
    replaces its values (a resumed trainer repeats its last step). Returns how many."""
    if not isinstance(entries, list) or not entries or len(entries) > MAX_METRICS:
        raise ValidationFailed(f"metrics: a list of 1-{MAX_METRICS} {{step, values}} objects.",
                               details={"metrics": ["Required."]})  # fmt: skip
    errors: dict[str, list[str]] = {}
    clean: dict[int, dict[str, float]] = {}
    for n, entry in enumerate(entries):
        where = f"metrics[{n}]"
        step = entry.get("step") if isinstance(entry, dict) else None
        values = entry.get("values") if isinstance(entry, dict) else None
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < 2**31:
            errors[f"{where}.step"] = ["A whole number from 0."]
        if not isinstance(values, dict) or not values or len(values) > 100:
            errors[f"{where}.values"] = ["An object of 1-100 named numbers."]
        else:
            bad = [k for k, v in values.items() if not isinstance(k, str) or len(k) > 64 or not _number(v)]
            if bad:
                errors[f"{where}.values"] = [f"Not a finite number (or a name over 64 characters): {bad[:5]}."]
        if not any(k.startswith(where) for k in errors):
            clean[step] = {k: (None if v is None else float(v)) for k, v in values.items()}
    if errors:
        raise ValidationFailed.naming(errors)
    with transaction.atomic():
        for step, values in clean.items():
            JobMetric.objects.update_or_create(job=job, step=step, defaults={"values": values})
        last = job.metrics.aggregate(last=Max("step"))["last"]
        TrainingJob.objects.filter(pk=job.pk).update(steps_done=(last or 0) + 1, updated_at=timezone.now())
        if job.state == "registered":
            TrainingJob.objects.filter(pk=job.pk, state="registered").update(state="running")
    job.refresh_from_db()
    return len(clean)


def _number(value: Any) -> bool:
    if value is None:
        return True  # a metric with no value this step (e.g. no group survived)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def rollouts_post(*, job: TrainingJob, outcomes: Any) -> tuple[int, int]:
    """Record the job's per-task outcomes ({version_hash, sample_id, passed}) as
    trusted attempts under the job's solver, where the difficulty model counts them.
    The same (version, sample_id) posted again is skipped. Returns (created, skipped)."""
    if not isinstance(outcomes, list) or not outcomes or len(outcomes) > MAX_ROLLOUTS:
        raise ValidationFailed(f"rollouts: a list of 1-{MAX_ROLLOUTS} outcomes.", details={"rollouts": ["Required."]})
    errors: dict[str, list[str]] = {}
    for n, outcome in enumerate(outcomes):
        where = f"rollouts[{n}]"
        if not isinstance(outcome, dict):
            errors[where] = ["An object with version_hash, sample_id and passed."]
            continue
        if not isinstance(outcome.get("version_hash"), str):
            errors[f"{where}.version_hash"] = ["Required: the task version's content hash."]
        sample_id = outcome.get("sample_id")
        if not isinstance(sample_id, (str, int)) or isinstance(sample_id, bool) or not 0 < len(str(sample_id)) <= 200:
            errors[f"{where}.sample_id"] = ["Required: your id for this rollout (at most 200 characters)."]
        if not isinstance(outcome.get("passed"), bool):
            errors[f"{where}.passed"] = ["Required: true or false."]
        session = outcome.get("session")
        if session is not None and not (isinstance(session, str) and SESSION_ID.fullmatch(session)):
            errors[f"{where}.session"] = ["The agent session's id (32 hexadecimal characters), when there is one."]
    members = {m.content_hash: m for m in SnapshotMember.objects.filter(snapshot=job.snapshot).only(
        "content_hash", "task_id", "version_id")}  # fmt: skip
    for n, outcome in enumerate(outcomes):
        digest = outcome.get("version_hash") if isinstance(outcome, dict) else None
        if isinstance(digest, str) and digest not in members:
            errors[f"rollouts[{n}].version_hash"] = [f"Not in this job's snapshot {job.snapshot.hash[:12]}."]
    if errors:
        raise ValidationFailed.naming(errors)
    now = timezone.now()
    with transaction.atomic():
        solver, _ = Solver.objects.get_or_create(name=job.solver)
        rows = [Attempt(solver=solver, task_id=members[o["version_hash"]].task_id,
                        version_id=members[o["version_hash"]].version_id, sample_id=str(o["sample_id"]),
                        status="passed" if o["passed"] else "failed", trusted=True,
                        result={"job": job.pk, "reward": o.get("reward") if _number(o.get("reward")) else None,
                                **({"session": o["session"]} if o.get("session") else {})},
                        finished_at=now) for o in outcomes]  # fmt: skip
        before = Attempt.objects.filter(solver=solver).count()
        Attempt.objects.bulk_create(rows, ignore_conflicts=True)
        after = Attempt.objects.filter(solver=solver).count()
        TrainingJob.objects.filter(pk=job.pk).update(rollouts=after)
        created = after - before
    if created:
        dispatch.delay_on_commit("evaluation.fit_difficulty")
    return created, len(rows) - created


def job_curves(job: TrainingJob) -> dict[str, list[tuple[int, float]]]:
    """Each metric's (step, value) series, for the job's page."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for step, values in job.metrics.order_by("step").values_list("step", "values"):
        for name, value in (values or {}).items():
            if value is not None:
                curves.setdefault(name, []).append((step, value))
    return curves
