"""Predicted difficulty for tasks with few or no rollouts.

A random forest (scikit-learn) learns the measured difficulty of the tasks a
fit has enough attempts for, from what the platform knows of every task
without running a solver: the statement's length, the number and kind of
tests, the reference's size, syntax-tree depth and cyclomatic complexity, the
mutation score and reference runtime of its last verification, and its tags.
Its error is measured by k-fold cross-validation (mean absolute error in
difficulty units, beside the error of always predicting the mean, and the
rank correlation of the held-out predictions), so a curator can see how far
to trust a predicted figure. Every figure shown says whether it is measured
or predicted.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SUITE_KINDS = ("assertions", "check_function", "pytest", "stdio")
MAX_TAGS = 20
MIN_TRAIN = 8


@dataclass(frozen=True)
class TaskFeatures:
    """What is known of a task before any solver tries it."""

    key: str
    statement: str
    suite_kind: str
    visible_tests: int
    hidden_tests: int
    reference: str
    tags: tuple[str, ...] = ()
    mutation_score: float | None = None
    runtime_p50_s: float | None = None


def code_shape(source: str) -> tuple[int, int, int, int]:
    """(non-blank lines, syntax-tree nodes, depth, cyclomatic complexity) of `source`;
    zeros when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return 0, 0, 0, 0
    lines = sum(1 for line in source.splitlines() if line.strip())
    nodes = branches = 0
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.IfExp, ast.comprehension, ast.ExceptHandler,
                             ast.AsyncFor, ast.With, ast.Assert)):  # fmt: skip
            branches += 1
        elif isinstance(node, ast.BoolOp):
            branches += len(node.values) - 1
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return lines, nodes, deepest, branches + 1


def feature_names(tags: Sequence[str]) -> list[str]:
    return [
        "statement_chars", "statement_words", "visible_tests", "hidden_tests",
        *(f"kind:{k}" for k in SUITE_KINDS),
        "reference_lines", "reference_nodes", "reference_depth", "reference_cyclomatic",
        "mutation_score", "runtime_p50_s", *(f"tag:{t}" for t in tags),
    ]  # fmt: skip


def feature_matrix(tasks: Sequence[TaskFeatures], tags: Sequence[str]) -> np.ndarray:
    """One row per task; NaN where a figure is unknown (no verification yet)."""
    rows = []
    for task in tasks:
        lines, nodes, depth, cyclomatic = code_shape(task.reference)
        rows.append([
            len(task.statement), len(task.statement.split()), task.visible_tests, task.hidden_tests,
            *(1.0 if task.suite_kind == k else 0.0 for k in SUITE_KINDS),
            lines, nodes, depth, cyclomatic,
            np.nan if task.mutation_score is None else task.mutation_score,
            np.nan if task.runtime_p50_s is None else task.runtime_p50_s,
            *(1.0 if t in task.tags else 0.0 for t in tags),
        ])  # fmt: skip
    return np.array(rows, dtype=float).reshape(len(tasks), len(feature_names(tags)))


@dataclass
class Prediction:
    predicted: dict[str, float]
    cv_mae: float | None
    baseline_mae: float | None
    cv_spearman: float | None
    folds: int
    trained_on: int
    features: list[str] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": "RandomForestRegressor", "cv_mae": self.cv_mae, "baseline_mae": self.baseline_mae,
            "cv_spearman": self.cv_spearman, "folds": self.folds, "trained_on": self.trained_on,
            "features": self.features, "importances": self.importances,
        }  # fmt: skip


def _model(seed: int) -> Any:
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        SimpleImputer(strategy="median", keep_empty_features=True),
        RandomForestRegressor(n_estimators=200, min_samples_leaf=2, random_state=seed, n_jobs=1),
    )


def predict_difficulty(
    tasks: Sequence[TaskFeatures], measured: dict[str, float], *, folds: int = 5, seed: int = 0
) -> Prediction:
    """Learn `measured` (task key -> difficulty) from the tasks' features; predict the
    others. With fewer than MIN_TRAIN measured tasks nothing is predicted."""
    from scipy.stats import spearmanr
    from sklearn.model_selection import KFold, cross_val_predict

    counts: dict[str, int] = {}
    for task in tasks:
        for tag in task.tags:
            counts[tag] = counts.get(tag, 0) + 1
    tags = sorted(counts, key=lambda t: (-counts[t], t))[:MAX_TAGS]
    names = feature_names(tags)
    train = [t for t in tasks if t.key in measured]
    rest = [t for t in tasks if t.key not in measured]
    if len(train) < MIN_TRAIN:
        return Prediction({}, None, None, None, 0, len(train), names)
    x, y = feature_matrix(train, tags), np.array([measured[t.key] for t in train])
    k = min(folds, len(train))
    splitter = KFold(n_splits=k, shuffle=True, random_state=seed)
    held_out = cross_val_predict(_model(seed), x, y, cv=splitter)
    baseline = np.empty_like(y)
    for fit_rows, test_rows in splitter.split(x):
        baseline[test_rows] = y[fit_rows].mean()
    model = _model(seed).fit(x, y)
    predicted = dict(zip((t.key for t in rest), map(float, model.predict(feature_matrix(rest, tags))), strict=True))
    rho = spearmanr(y, held_out).statistic if len(set(y)) > 1 else None
    forest = model[-1]
    importances = {n: round(float(v), 4) for n, v in zip(names, forest.feature_importances_, strict=True) if v > 0}
    return Prediction(
        predicted={key: round(value, 4) for key, value in predicted.items()},
        cv_mae=round(float(np.mean(np.abs(held_out - y))), 4),
        baseline_mae=round(float(np.mean(np.abs(baseline - y))), 4),
        cv_spearman=None if rho is None or np.isnan(rho) else round(float(rho), 4),
        folds=k,
        trained_on=len(train),
        features=names,
        importances=dict(sorted(importances.items(), key=lambda item: -item[1])),
    )
