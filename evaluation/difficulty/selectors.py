"""Reads of what the rollouts say: attempts, pass@k, the latest difficulty fit, the
catalogue's spread over bands and the near-duplicate pairs (DESIGN.md: services and
selectors)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from tasks_app.models import State, Task

# Not sandbox_error nor checker_error: neither says anything of the solver.
COUNTED_ATTEMPTS = ("passed", "failed", "error", "timeout", "memory_exceeded", "output_exceeded", "compile_error",
                    "presentation_error")  # fmt: skip


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

    from evaluation.difficulty.ability import MIN_MEASURED_ATTEMPTS, target_ability
    from evaluation.difficulty.irt import band_of

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
