"""Fitting difficulty from the attempts on record, and keeping every fit."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.utils import timezone

from evaluation.difficulty.ability import MIN_MEASURED_ATTEMPTS, target_ability
from evaluation.difficulty.irt import TOO_EASY, TOO_HARD, Cell, band_of, fit_1pl
from evaluation.difficulty.predict import TaskFeatures, predict_difficulty
from evaluation.difficulty.selectors import attempt_counts
from evaluation.models import DifficultyFit

# Below this a fit's figures mean nothing (one task has no difficulty relative to anything).
MIN_FIT_TASKS = 2
MIN_FIT_ATTEMPTS = 10


def difficulty_fit_create(
    *, regularisation: float = 1.0, bootstrap: int = 100, seed: int = 0, actor: Any = None
) -> DifficultyFit:
    """Fit abilities and difficulties to every counted attempt, and keep the fit.

    Steps: gather (solver, task, attempts, passes) on each task's latest version
    (sandbox errors and unfinished attempts left out); record a running fit with
    the digest of those cells; fit (irt.fit_1pl) with bootstrap intervals; store
    the figures, or the reason it could not fit (no attempts, bad parameters).
    """
    counts = attempt_counts()
    cells = [Cell(r["solver"], r["task"], r["attempts"], r["passes"]) for r in counts]
    params = {"model": "1PL", "regularisation": regularisation, "bootstrap": bootstrap, "seed": seed}
    data = [params, sorted((c.solver, c.task, c.attempts, c.passes) for c in cells)]
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    fit_row = DifficultyFit.objects.create(params=params, data_digest=digest, requested_by=actor)
    tasks, attempts = len({c.task for c in cells}), sum(c.attempts for c in cells)
    try:
        if tasks < MIN_FIT_TASKS or attempts < MIN_FIT_ATTEMPTS:
            raise ValueError(
                f"too little data to fit: {tasks} task(s) and {attempts} counted attempt(s); a fit needs at least "
                f"{MIN_FIT_TASKS} tasks and {MIN_FIT_ATTEMPTS} attempts (sandbox errors and unfinished runs "
                "do not count)"
            )
        fit = fit_1pl(cells, regularisation=regularisation, bootstrap=bootstrap, seed=seed)
    except ValueError as exc:
        DifficultyFit.objects.filter(pk=fit_row.pk).update(state="failed", error=str(exc), finished_at=timezone.now())
        fit_row.refresh_from_db()
        return fit_row

    def figures(values: dict[str, float], intervals: dict[str, tuple[float, float]]) -> dict[str, dict]:
        return {
            name: {"value": round(value, 4), "low": round(intervals[name][0], 4) if name in intervals else None,
                   "high": round(intervals[name][1], 4) if name in intervals else None}
            for name, value in values.items()
        }  # fmt: skip

    attempts_by_task: dict[str, int] = {}
    for cell in cells:
        attempts_by_task[cell.task] = attempts_by_task.get(cell.task, 0) + cell.attempts
    difficulties = figures(fit.difficulties, fit.difficulty_intervals)
    for task, figure in difficulties.items():
        figure["attempts"] = attempts_by_task.get(task, 0)
    measured = {t: f["value"] for t, f in difficulties.items() if f["attempts"] >= MIN_MEASURED_ATTEMPTS}
    prediction = predict_difficulty(_task_features(), measured, seed=seed)
    DifficultyFit.objects.filter(pk=fit_row.pk).update(
        predicted=prediction.predicted,
        predictor={**prediction.as_dict(), "min_measured_attempts": MIN_MEASURED_ATTEMPTS},
        state="done",
        solvers=len(fit.abilities),
        tasks=len(fit.difficulties),
        attempts=fit.attempts,
        log_loss=round(fit.log_loss, 6),
        abilities=figures(fit.abilities, fit.ability_intervals),
        difficulties=difficulties,
        finished_at=timezone.now(),
    )
    fit_row.refresh_from_db()
    _flag_bands(fit_row)
    return fit_row


BAND_FLAGS = {
    TOO_EASY: "passes this task with probability {rate:.0%}: a group of rollouts would almost always all pass, "
    "which gives a group-relative policy gradient no signal",
    TOO_HARD: "passes this task with probability {rate:.0%}: a group of rollouts would almost always all fail, "
    "which gives a group-relative policy gradient no signal",
}


def _flag_bands(fit: DifficultyFit) -> None:
    """TOO_EASY and TOO_HARD flags from the newest fit, against the configured target
    solver (settings.DIFFICULTY["TARGET_SOLVER"]) or the median one; they replace the
    last fit's."""
    from django.conf import settings
    from django.db import transaction

    from evaluation.models import TaskFlag
    from tasks_app.models import Task

    solver = getattr(settings, "DIFFICULTY", {}).get("TARGET_SOLVER") or None
    if solver and solver not in fit.abilities:
        solver = None  # the configured solver has no rollouts in this fit: read against the median
    ability, against = target_ability(fit, solver)
    tasks = {t.slug: t for t in Task.objects.filter(slug__in=list(fit.difficulties))}
    flags = []
    for slug, band in difficulty_bands(fit, solver=solver).items():
        if band["band"] not in BAND_FLAGS or slug not in tasks:
            continue
        rate = band["expected_pass_rate"]
        message = f"A solver of the target ability ({against}, {ability:+.2f}) " + BAND_FLAGS[band["band"]].format(
            rate=rate
        )
        flags.append(TaskFlag(task=tasks[slug], code=band["band"], severity="warning", message=message, fit=fit,
                              details={"expected_pass_rate": rate, "target": against, "ability": ability,
                                       "difficulty": fit.difficulties[slug]}))  # fmt: skip
    with transaction.atomic():
        TaskFlag.objects.filter(code__in=list(BAND_FLAGS)).delete()
        TaskFlag.objects.bulk_create(flags)


def _task_features() -> list[TaskFeatures]:
    """What the predictor may use of every task in the catalogue (retired ones left out)."""
    from tasks_app.models import State, Task

    tasks = (
        Task.objects.exclude(state=State.RETIRED)
        .exclude(latest_version=None)
        .select_related("latest_version")
        .prefetch_related("tags", "latest_version__solutions", "latest_version__verifications")
    )
    features = []
    for task in tasks:
        version = task.latest_version
        references = [s.code for s in version.solutions.all() if s.role == "reference"]
        done = [v for v in version.verifications.all() if v.summary]
        summary = max(done, key=lambda v: v.created_at).summary if done else {}
        features.append(
            TaskFeatures(
                key=task.slug,
                statement=version.statement,
                suite_kind=version.suite_kind,
                visible_tests=len(version.visible_tests),
                hidden_tests=len(version.hidden_tests),
                reference=references[0] if references else "",
                tags=tuple(sorted(t.name for t in task.tags.all())),
                mutation_score=(summary.get("mutation_score") or {}).get("value"),
                runtime_p50_s=(summary.get("runtime") or {}).get("p50"),
            )
        )
    return features


def difficulty_bands(fit: DifficultyFit, *, solver: str | None = None) -> dict[str, dict[str, Any]]:
    """Each task's expected pass rate at the target ability, and its band."""
    import math

    ability, _ = target_ability(fit, solver)
    bands = {}
    for task, figure in fit.difficulties.items():
        rate = 1.0 / (1.0 + math.exp(-(ability - float(figure["value"]))))
        bands[task] = {"expected_pass_rate": round(rate, 4), "band": band_of(rate)}
    return bands
