"""Reads of the verification pipeline (DESIGN.md: services and selectors)."""

from __future__ import annotations

import difflib
from typing import Any

from django.db.models import Count, QuerySet

from evaluation.models import MutantEquivalence, Verification, VerificationState
from tasks_app.models import State, Task, TaskVersion


def versions_to_verify(*, everything: bool = False, slug: str = "", tag: str = "") -> QuerySet[TaskVersion]:
    """The latest version of each selected task (retired tasks left out)."""
    tasks = Task.objects.exclude(state=State.RETIRED).exclude(latest_version=None)
    if slug:
        tasks = tasks.filter(slug=slug)
    elif tag:
        tasks = tasks.filter(tags__name=tag)
    elif not everything:
        return TaskVersion.objects.none()
    ids = tasks.values_list("latest_version_id", flat=True)
    return TaskVersion.objects.filter(pk__in=ids).select_related("task").order_by("task__slug")


def latest_verification(version: TaskVersion) -> Verification | None:
    return version.verifications.order_by("-created_at").first()


def finished_verifications(versions: QuerySet[TaskVersion]) -> list[Verification]:
    """For each version, its newest finished verification (one query)."""
    rows = (
        Verification.objects.filter(version__in=versions, state=VerificationState.DONE)
        .select_related("version__task")
        .prefetch_related("flags")
        .order_by("version__task__slug", "version_id", "-finished_at")
    )
    seen: set[int] = set()
    newest = []
    for verification in rows:
        if verification.version_id not in seen:
            seen.add(verification.version_id)
            newest.append(verification)
    return newest


FINAL_STATUSES = ("passed", "failed", "error", "timeout", "memory_exceeded", "output_exceeded", "sandbox_error")
METRIC_ROWS = (
    ("false_negative_rate", "Reference false-negative rate", "reference runs that failed"),
    ("flake_rate", "Flake rate", "solutions whose verdict changed between repeats"),
    ("adversarial_pass_rate", "Adversarial pass rate", "runs of known-wrong solutions that passed"),
    ("mutation_score", "Mutation score", "mutants killed (equivalent ones left out)"),
    ("known_wrong_pass_rate", "Wrong programs passing", "adversarial, mutant and probe runs that passed"),
)


def verification_report(verification: Verification, *, role: str = "", status: str = "") -> dict[str, Any]:
    """What the report page shows: metrics with intervals, flags, surviving mutants
    with their diffs, probe outcomes, and the runs (filtered by role and status)."""
    summary = verification.summary or {}
    metrics_rows = [
        {"key": key, "label": label, "means": means, **(summary.get(key) or {})}
        for key, label, means in METRIC_ROWS
        if summary.get(key)
    ]
    executions = verification.executions.all()
    reference = verification.version.solutions.filter(role="reference").order_by("label").first()
    survivors = set(summary.get("surviving_mutants") or [])
    equivalent = set(
        MutantEquivalence.objects.filter(task_id=verification.version.task_id).values_list("mutant_digest", flat=True)
    )
    mutants = [
        {
            "execution": e,
            "diff": _diff(reference.code if reference else "", e.code),
            "equivalent": e.subject in equivalent,
        }
        for e in executions.filter(role="mutant", subject__in=survivors | equivalent).order_by("subject")
    ]
    runs = executions.defer("code")
    if role:
        runs = runs.filter(role=role)
    if status in FINAL_STATUSES or status in ("pending", "running"):
        runs = runs.filter(status=status)
    return {
        "summary": summary,
        "metric_rows": metrics_rows,
        "noise": summary.get("reward_noise"),
        "runtime": summary.get("runtime"),
        "flags": list(verification.flags.all()),
        "mutants": mutants,
        "probes": list(executions.filter(role="probe").defer("code").order_by("subject")),
        "runs": list(runs.order_by("role", "subject", "repeat")[:500]),
        "status_counts": dict(executions.values_list("status").annotate(n=Count("pk")).values_list("status", "n")),
    }


def _diff(reference: str, mutant: str) -> str:
    lines = difflib.unified_diff(reference.splitlines(True), mutant.splitlines(True), "reference.py", "mutant.py")
    return "".join(lines)


# -- rollouts and difficulty ---------------------------------------------------------------

COUNTED_ATTEMPTS = ("passed", "failed", "error", "timeout", "memory_exceeded", "output_exceeded")


def attempt_counts(*, task: str = "", solver: str = "") -> list[dict[str, Any]]:
    """Attempts and passes per (task, solver) on each task's latest version. Only
    finished attempts count: a sandbox error is the platform's failure, not the
    solver's, and is left out of both numbers."""
    from django.db.models import F, Q

    from evaluation.models import Attempt

    rows = Attempt.objects.filter(version_id=F("task__latest_version_id"), status__in=COUNTED_ATTEMPTS)
    if task:
        rows = rows.filter(task__slug=task)
    if solver:
        rows = rows.filter(solver__name=solver)
    grouped = (
        rows.values("task__slug", "solver__name")
        .annotate(attempts=Count("pk"), passes=Count("pk", filter=Q(status="passed")))
        .order_by("task__slug", "solver__name")
    )
    return [{"task": r["task__slug"], "solver": r["solver__name"], "attempts": r["attempts"], "passes": r["passes"]}
            for r in grouped]  # fmt: skip


def pass_at_k_rows(*, task: str = "", solver: str = "", ks: tuple[int, ...] = (1, 5, 10)) -> list[dict[str, Any]]:
    """attempt_counts with pass@k and its interval for each k."""
    from evaluation.difficulty.passk import pass_at_ks

    return [{**row, "pass_at_k": [p.as_dict() for p in pass_at_ks(row["attempts"], row["passes"], ks)]}
            for row in attempt_counts(task=task, solver=solver)]  # fmt: skip


def latest_fit() -> Any:
    from evaluation.models import DifficultyFit

    return DifficultyFit.objects.filter(state="done").order_by("-created_at", "-pk").first()


def difficulty_table(*, solver: str | None = None, fit: Any = None) -> dict[str, Any] | None:
    """The latest fit as a curator reads it: each task's difficulty with where it comes
    from (measured from enough attempts, or predicted), its interval, and its band
    against the target solver; None before the first fit."""
    import math

    from evaluation.difficulty.irt import band_of
    from evaluation.services.difficulty import MIN_MEASURED_ATTEMPTS, target_ability

    fit = fit or latest_fit()
    if fit is None:
        return None
    ability, against = target_ability(fit, solver)
    rows = []
    for task, figure in fit.difficulties.items():
        enough = figure.get("attempts", 0) >= MIN_MEASURED_ATTEMPTS
        if not enough and task in fit.predicted:
            continue  # shown below, as predicted
        rows.append({"task": task, "difficulty": figure["value"], "low": figure["low"], "high": figure["high"],
                     "attempts": figure.get("attempts", 0),
                     "source": "measured" if enough else "measured_few_attempts"})  # fmt: skip
    for task, value in fit.predicted.items():
        attempts = fit.difficulties.get(task, {}).get("attempts", 0)
        rows.append({"task": task, "difficulty": value, "low": None, "high": None, "attempts": attempts,
                     "source": "predicted"})  # fmt: skip
    for row in rows:
        rate = 1.0 / (1.0 + math.exp(-(ability - float(row["difficulty"]))))
        row.update(expected_pass_rate=round(rate, 4), band=band_of(rate))
    rows.sort(key=lambda r: r["difficulty"])
    return {
        "fit": {
            "id": fit.pk,
            "created_at": fit.created_at.isoformat(),
            "tasks": fit.tasks,
            "solvers": fit.solvers,
            "attempts": fit.attempts,
            "log_loss": fit.log_loss,
            "data_digest": fit.data_digest,
            "params": fit.params,
        },
        "target": {"ability": round(ability, 4), "against": against},
        "predictor": fit.predictor,
        "tasks": rows,
        "solvers": sorted(
            (
                {"solver": name, "ability": f["value"], "low": f["low"], "high": f["high"]}
                for name, f in fit.abilities.items()
            ),
            key=lambda r: -r["ability"],
        ),
    }


def diversity(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Tasks by tag and band, so a curator sees what the catalogue lacks: tasks with
    no difficulty yet count under "unknown"."""
    from evaluation.difficulty.irt import LEARNABLE, TOO_EASY, TOO_HARD

    bands = (TOO_EASY, LEARNABLE, TOO_HARD, "unknown")
    band_of = {r["task"]: r["band"] for r in rows}
    tasks = Task.objects.exclude(state=State.RETIRED).exclude(latest_version=None).prefetch_related("tags")
    by_tag: dict[str, dict[str, int]] = {}
    totals = dict.fromkeys(bands, 0)
    for task in tasks:
        band = band_of.get(task.slug, "unknown")
        totals[band] += 1
        for tag in task.tags.all():
            by_tag.setdefault(tag.name, dict.fromkeys(bands, 0))[band] += 1
    ordered = sorted(by_tag.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    tag_rows = [{"tag": tag, "counts": [counts[b] for b in bands], "total": sum(counts.values())}
                for tag, counts in ordered]  # fmt: skip
    return {"bands": bands, "totals": [totals[b] for b in bands], "tags": tag_rows}


def duplicate_pairs() -> list[dict[str, Any]]:
    from evaluation.models import TaskFlag

    flags = TaskFlag.objects.filter(code="DUPLICATE").select_related("task", "related").order_by("task__slug")
    return [{"task": f.task.slug, "other": f.related.slug, "details": f.details, "message": f.message}
            for f in flags if f.related is not None and f.task.slug < f.related.slug]  # fmt: skip


def fits_recent(limit: int = 10) -> list[Any]:
    from evaluation.models import DifficultyFit

    return list(DifficultyFit.objects.order_by("-created_at", "-pk")[:limit])


def uploads_recent(limit: int = 10) -> list[Any]:
    from evaluation.models import SampleUpload

    return list(SampleUpload.objects.select_related("solver").order_by("-created_at", "-pk")[:limit])
