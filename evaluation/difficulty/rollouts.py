"""Solver rollouts: samples in, run in the sandbox pool, stored as attempts.

An attempt is run exactly as a verification's execution is (the version's tests,
limits and harness, one sandbox request), claimed with a conditional update,
recorded only while it is still running, and retried when the sandbox failed:
a `sandbox_error` is never counted as a wrong answer, in pass@k or in the
difficulty fit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluation.difficulty.samples import (
    Sample,
    SamplesError,
    extract_code,
    parse_samples,
    solver_name_ok,
    with_prompt,
)
from evaluation.models import Attempt, SampleUpload, Solver
from evaluation.sandbox import engine
from evaluation.sandbox.errors import PoolBusy, SandboxUnavailable
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import OUTPUT_KEPT, Status
from evaluation.sandbox.worker_names import worker_name
from evaluation.verification.config import code_digest
from tasks_app.importers.records import slugify
from tasks_app.models import Task

CLAIM_LIFETIME_S = 120.0  # past the version's time limit: the claiming worker died


@dataclass(frozen=True)
class IngestResult:
    upload: SampleUpload
    repeated: bool  # the same file was ingested before: nothing was added
    skipped: int  # samples whose (solver, task version, sample_id) were there already


def _tasks_for(samples: list[Sample]) -> dict[str, Task]:
    """Each sample's task, by slug or by its task_id slugified ("HumanEval/0" is
    humaneval-0); an unknown id rejects the file at its first line."""
    wanted = {s.task_id for s in samples} | {slugify(s.task_id) for s in samples}
    found = {t.slug: t for t in Task.objects.filter(slug__in=wanted).select_related("latest_version")}
    tasks = {}
    for sample in samples:
        task = found.get(sample.task_id) or found.get(slugify(sample.task_id))
        if task is None:
            raise SamplesError(sample.line, f"no task {sample.task_id!r} in the catalogue")
        if task.latest_version is None:
            raise SamplesError(sample.line, f"task {task.slug!r} has no version to run against")
        tasks[sample.task_id] = task
    return tasks


def samples_ingest(
    *, data: bytes, solver: str | None = None, filename: str = "", source: str = "cli", actor: Any = None
) -> IngestResult:
    """Store a file of samples as attempts to run.

    Steps: parse and check every line (SamplesError names the first bad one, and
    nothing is stored); give every sample a solver (its own `solver`, else
    `solver`) and a task; find the upload by digest (the same bytes for the same
    default solver: returned as it is); in one transaction, create the solvers,
    the upload and one pending attempt per new (solver, version, sample_id).
    """
    default = (solver or "").strip() or None
    if default is not None and len(default) > 120:
        raise SamplesError(0, "the solver name is longer than 120 characters")
    if default is not None and not solver_name_ok(default):
        raise SamplesError(0, "the solver name has control characters; use a plain name like policy-400")
    samples = parse_samples(data)
    for sample in samples:
        if (sample.solver or default) is None:
            raise SamplesError(sample.line, "no solver: give one for the file, or a `solver` field on the line")
        if sample.solver is not None and len(sample.solver) > 120:
            raise SamplesError(sample.line, "`solver` is longer than 120 characters")
        if len(sample.sample_id) > 200:
            raise SamplesError(sample.line, "`sample_id` is longer than 200 characters")
    tasks = _tasks_for(samples)
    digest = hashlib.sha256(data + b"\0" + (default or "").encode()).hexdigest()
    existing = SampleUpload.objects.filter(digest=digest).first()
    if existing is not None:
        return IngestResult(existing, repeated=True, skipped=len(samples))
    with transaction.atomic():
        solvers = {}
        for name in {s.solver or default for s in samples}:
            solvers[name], _ = Solver.objects.get_or_create(name=name)
        upload, made = SampleUpload.objects.get_or_create(
            digest=digest,
            defaults={
                "filename": filename[:255],
                "solver": solvers.get(default),
                "source": source,
                "uploaded_by": actor,
                "samples": len(samples),
            },
        )
        if not made:  # the same file, ingested at the same moment by someone else
            return IngestResult(upload, repeated=True, skipped=len(samples))
        rows = []
        for sample in samples:
            task = tasks[sample.task_id]
            version = task.latest_version
            code = extract_code(sample.completion)
            if version.suite_kind != "stdio":
                code = with_prompt(
                    code, prompt=version.starter_code, entry_point=version.entry_point, language=version.language
                )
            rows.append(
                Attempt(
                    solver=solvers[sample.solver or default],
                    task=task,
                    version=version,
                    upload=upload,
                    sample_id=sample.sample_id,
                    code=code,
                    code_digest=code_digest(code),
                )
            )
        Attempt.objects.bulk_create(rows, ignore_conflicts=True)
        created = upload.attempts.count()
        SampleUpload.objects.filter(pk=upload.pk).update(created=created, total=created)
    upload.refresh_from_db()
    return IngestResult(upload, repeated=False, skipped=len(samples) - created)


def attempt_run(*, attempt_id: int, worker: str | None = None) -> Attempt:
    """Run one attempt if nobody else is, and record its outcome.

    Steps: claim it (pending, a sandbox_error being retried, or a claim gone
    stale); run the completion against its version's tests; record the outcome
    if the attempt is still running, counting it in its upload's progress unless
    the sandbox failed. Raises SandboxUnavailable after recording a sandbox error.
    """
    attempt = Attempt.objects.select_related("version").get(pk=attempt_id)
    now = timezone.now()
    stale = now - timedelta(seconds=float(attempt.version.time_limit_s) + CLAIM_LIFETIME_S)
    claimable = Q(status="pending") | Q(status="sandbox_error") | Q(status="running", started_at__lt=stale)
    me = worker or worker_name()
    if not Attempt.objects.filter(claimable, pk=attempt_id).update(
        status="running", started_at=now, worker=me, tries=F("tries") + 1
    ):
        return attempt
    request = run_request_for(attempt.version, attempt.code, seed=0, repeat=0)
    try:
        result = engine.run(request)
    except PoolBusy as exc:
        Attempt.objects.filter(pk=attempt_id, status="running").update(status="pending", started_at=None)
        raise SandboxUnavailable(str(exc)) from exc
    payload = result.as_dict()
    for stream in ("stdout", "stderr"):
        payload[stream] = payload[stream][:OUTPUT_KEPT]
    outcome = {"status": str(result.status), "result": payload, "wall_s": result.wall_s, "finished_at": timezone.now()}
    written = Attempt.objects.filter(pk=attempt_id, status="running").update(**outcome)
    if written and result.status != Status.SANDBOX_ERROR and attempt.upload_id is not None:
        SampleUpload.objects.filter(pk=attempt.upload_id).update(done=F("done") + 1)
    for name, value in {**outcome, "started_at": now, "worker": me}.items():
        setattr(attempt, name, value)
    if result.status == Status.SANDBOX_ERROR:
        raise SandboxUnavailable(result.message or "the sandbox failed")
    return attempt


def upload_todo(upload: SampleUpload) -> list[int]:
    """Its attempts still to run: pending, failed by the sandbox, or claimed by a dead worker."""
    return list(upload.attempts.exclude(status__in=[s for s in Status if s != Status.SANDBOX_ERROR])
                .order_by("pk").values_list("pk", flat=True))  # fmt: skip


def upload_finish(*, upload_id: int) -> bool:
    """Mark the upload finished once every attempt has run; True for the one call that
    did (it triggers the refit of difficulty)."""
    return bool(
        SampleUpload.objects.filter(pk=upload_id, finished_at__isnull=True, done__gte=F("total")).update(
            finished_at=timezone.now()
        )
    )


def upload_run_inline(*, upload: SampleUpload, workers: int = 2, progress: Any = None) -> SampleUpload:
    """Every attempt of an upload, run here on the sandbox pool (no broker)."""
    from evaluation.verification.threads import run_on_threads

    def one(attempt_id: int) -> None:
        try:
            attempt_run(attempt_id=attempt_id)
        except SandboxUnavailable:
            pass  # recorded on the attempt; `ingest_samples` reports it and a rerun retries it

    run_on_threads(upload_todo(upload), one, workers=workers, progress=progress)
    upload_finish(upload_id=upload.pk)
    upload.refresh_from_db()
    return upload


def outcomes_record(*, outcomes: list[dict[str, Any]], actor: Any = None) -> tuple[int, int]:
    """Store outcomes a trainer computed itself as trusted attempts (nothing runs).

    Every task id must resolve (a SamplesError names the first that does not, by
    its 1-based position, and nothing is stored); an outcome already on record
    for (solver, version, sample_id) is skipped. Returns (created, skipped)."""
    samples = [Sample(n, o["task_id"], o.get("completion") or "", o["solver"], o["sample_id"])
               for n, o in enumerate(outcomes, 1)]  # fmt: skip
    tasks = _tasks_for(samples)
    now = timezone.now()
    with transaction.atomic():
        solvers = {name: Solver.objects.get_or_create(name=name)[0] for name in {o["solver"] for o in outcomes}}
        rows = []
        for sample, outcome in zip(samples, outcomes, strict=True):
            task = tasks[sample.task_id]
            code = extract_code(sample.completion)
            rows.append(Attempt(solver=solvers[sample.solver], task=task, version=task.latest_version,
                                sample_id=sample.sample_id, code=code, code_digest=code_digest(code) if code else "",
                                status="passed" if outcome["passed"] else "failed", trusted=True,
                                result={"posted_by": getattr(actor, "username", None)}, finished_at=now))  # fmt: skip
        before = Attempt.objects.count()
        Attempt.objects.bulk_create(rows, ignore_conflicts=True)
        created = Attempt.objects.count() - before
    return created, len(rows) - created
