"""Task difficulty and solver ability from pass/fail outcomes: a one-parameter
(Rasch) item-response model fitted with scikit-learn.

The model: solver s passes task t on one attempt with probability

    P(pass) = sigmoid(ability_s - difficulty_t)

It is a logistic regression whose features are one-hot columns, +1 for the
solver and -1 for the task, so that the fitted coefficients are the abilities
and the difficulties themselves. Two choices make it well posed:

- An L2 penalty (scikit-learn's `C`, here `1 / regularisation`). A task every
  solver passed (or failed) has no finite maximum-likelihood difficulty; the
  penalty keeps it finite and says "very easy" (or "very hard") instead.
- The scale has no natural zero (adding a constant to every ability and every
  difficulty changes no probability), so difficulties are centred at mean 0
  and the intercept is folded into the abilities.

Counts, not single attempts, go in: each (solver, task) cell with n attempts
and c passes becomes two weighted rows. Intervals come from a bootstrap that
redraws each cell's passes from Binomial(n, c / n) and refits (the design
stays whole: no solver or task drops out of a replicate), taking the 2.5th and
97.5th percentiles of each parameter over the replicates.

Bands, relative to a target solver ability: TOO_EASY when the expected pass
rate is at least 0.95, TOO_HARD at most 0.05, LEARNABLE between. Groups of
rollouts that all pass or all fail give a group-relative policy gradient no
signal; these bands say where that happens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported where a fit runs: a web process that only reads fits never loads them (~1.4 s, ~100 MB)
    from sklearn.linear_model import LogisticRegression

TOO_EASY, LEARNABLE, TOO_HARD = "TOO_EASY", "LEARNABLE", "TOO_HARD"
EASY_AT, HARD_AT = 0.95, 0.05


@dataclass(frozen=True)
class Cell:
    """What one solver did on one task: `passes` out of `attempts`."""

    solver: str
    task: str
    attempts: int
    passes: int


@dataclass
class IrtFit:
    abilities: dict[str, float]
    difficulties: dict[str, float]
    ability_intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    difficulty_intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    attempts: int = 0
    log_loss: float = 0.0
    regularisation: float = 1.0
    bootstrap: int = 0
    seed: int = 0

    def expected_pass_rate(self, task: str, ability: float) -> float:
        return _sigmoid(ability - self.difficulties[task])

    def band(self, task: str, ability: float) -> str:
        return band_of(self.expected_pass_rate(task, ability))


def band_of(expected_pass_rate: float) -> str:
    if expected_pass_rate >= EASY_AT:
        return TOO_EASY
    if expected_pass_rate <= HARD_AT:
        return TOO_HARD
    return LEARNABLE


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _checked(cells: Iterable[Cell]) -> list[Cell]:
    merged: dict[tuple[str, str], list[int]] = {}
    for index, cell in enumerate(cells):
        for name in ("attempts", "passes"):
            value = getattr(cell, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"cell {index} ({cell.solver}, {cell.task}): {name} must be a whole number >= 0")
        if cell.passes > cell.attempts:
            raise ValueError(f"cell {index} ({cell.solver}, {cell.task}): more passes than attempts")
        total = merged.setdefault((cell.solver, cell.task), [0, 0])
        total[0] += cell.attempts
        total[1] += cell.passes
    kept = [Cell(solver, task, n, c) for (solver, task), (n, c) in merged.items() if n > 0]
    if not kept:
        raise ValueError("no attempts to fit")
    return kept


class _Design:
    """The fixed part of every fit: rows, one-hot columns, and the cells' sizes."""

    def __init__(self, cells: list[Cell]) -> None:
        self.solvers = sorted({c.solver for c in cells})
        self.tasks = sorted({c.task for c in cells})
        solver_col = {s: i for i, s in enumerate(self.solvers)}
        task_col = {t: len(self.solvers) + i for i, t in enumerate(self.tasks)}
        size = len(cells)
        rows = np.repeat(np.arange(2 * size), 2)
        cols = np.empty(4 * size, dtype=np.int64)
        values = np.tile([1.0, -1.0], 2 * size)
        for i, cell in enumerate(cells):  # row 2i: the passes, row 2i+1: the failures
            cols[4 * i : 4 * i + 4] = [solver_col[cell.solver], task_col[cell.task]] * 2
        from scipy import sparse

        self.matrix = sparse.csr_matrix((values, (rows, cols)), shape=(2 * size, len(self.solvers) + len(self.tasks)))
        self.labels = np.tile([1, 0], size)
        self.attempts = np.array([c.attempts for c in cells], dtype=np.int64)
        self.passes = np.array([c.passes for c in cells], dtype=np.int64)

    def weights(self, passes: np.ndarray) -> np.ndarray:
        return np.column_stack([passes, self.attempts - passes]).ravel().astype(float)


def _fit_once(design: _Design, passes: np.ndarray, model: LogisticRegression) -> tuple[np.ndarray, np.ndarray, float]:
    """(abilities, difficulties, weighted log loss), difficulties centred at 0."""
    weights = design.weights(passes)
    nonzero = weights > 0
    labels = design.labels[nonzero]
    if labels.min() == labels.max():  # every attempt passed, or none did: one class
        offset = 10.0 if labels[0] == 1 else -10.0
        return np.full(len(design.solvers), offset), np.zeros(len(design.tasks)), 0.0
    model.fit(design.matrix[nonzero], labels, sample_weight=weights[nonzero])
    coef = model.coef_[0]
    abilities, difficulties = coef[: len(design.solvers)], coef[len(design.solvers) :]
    centre = difficulties.mean()
    probability = model.predict_proba(design.matrix[nonzero])[:, 1].clip(1e-12, 1 - 1e-12)
    loss = -np.sum(weights[nonzero] * np.where(labels == 1, np.log(probability), np.log(1 - probability)))
    return abilities + model.intercept_[0] - centre, difficulties - centre, float(loss / weights.sum())


def fit_1pl(cells: Iterable[Cell], *, regularisation: float = 1.0, bootstrap: int = 100, seed: int = 0) -> IrtFit:
    """Fit abilities and difficulties to `cells`, with bootstrap intervals.

    Steps: merge repeated cells and check the counts (a ValueError names the bad
    cell); fit once on the data; refit `bootstrap` times on redrawn passes;
    report each parameter with its 95% percentile interval.
    """
    if not (isinstance(regularisation, (int, float)) and regularisation > 0 and math.isfinite(regularisation)):
        raise ValueError(f"regularisation must be a positive number, got {regularisation!r}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ValueError(f"bootstrap must be a whole number >= 0, got {bootstrap!r}")
    design = _Design(_checked(cells))
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0 / regularisation, solver="lbfgs", max_iter=2000, tol=1e-6, warm_start=True)
    abilities, difficulties, loss = _fit_once(design, design.passes, model)
    fit = IrtFit(
        abilities=dict(zip(design.solvers, map(float, abilities), strict=True)),
        difficulties=dict(zip(design.tasks, map(float, difficulties), strict=True)),
        attempts=int(design.attempts.sum()),
        log_loss=loss,
        regularisation=float(regularisation),
        bootstrap=bootstrap,
        seed=seed,
    )
    if bootstrap:
        rng = np.random.default_rng(seed)
        rate = design.passes / design.attempts
        draws_a = np.empty((bootstrap, len(design.solvers)))
        draws_d = np.empty((bootstrap, len(design.tasks)))
        for b in range(bootstrap):
            draws_a[b], draws_d[b], _ = _fit_once(design, rng.binomial(design.attempts, rate), model)
        fit.ability_intervals = _intervals(design.solvers, draws_a)
        fit.difficulty_intervals = _intervals(design.tasks, draws_d)
    return fit


def _intervals(names: Sequence[str], draws: np.ndarray) -> dict[str, tuple[float, float]]:
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {name: (float(lo), float(hi)) for name, lo, hi in zip(names, low, high, strict=True)}


def simulate(
    abilities: dict[str, float], difficulties: dict[str, float], *, attempts: int, seed: int = 0
) -> list[Cell]:
    """Outcomes drawn from the model itself: for checking that a fit recovers what made them."""
    rng = np.random.default_rng(seed)
    cells = []
    for solver, ability in abilities.items():
        for task, difficulty in difficulties.items():
            passes = int(rng.binomial(attempts, _sigmoid(ability - difficulty)))
            cells.append(Cell(solver, task, attempts, passes))
    return cells
