from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from evaluation.difficulty.irt import LEARNABLE, TOO_EASY, TOO_HARD, Cell, band_of, fit_1pl, simulate


def _truth(solvers: int, tasks: int, seed: int) -> tuple[dict[str, float], dict[str, float]]:
    rng = np.random.default_rng(seed)
    abilities = {f"solver-{i}": float(a) for i, a in enumerate(rng.normal(0, 1, solvers))}
    difficulties = {f"task-{i}": float(d) for i, d in enumerate(rng.normal(0, 1.5, tasks))}
    return abilities, difficulties


def test_the_fit_recovers_the_difficulty_order_of_20_solvers_by_200_tasks():
    abilities, difficulties = _truth(20, 200, seed=1)
    fit = fit_1pl(simulate(abilities, difficulties, attempts=1, seed=2), bootstrap=0)  # one outcome per pair
    tasks = sorted(difficulties)
    rho_tasks = spearmanr([difficulties[t] for t in tasks], [fit.difficulties[t] for t in tasks]).statistic
    solvers = sorted(abilities)
    rho_solvers = spearmanr([abilities[s] for s in solvers], [fit.abilities[s] for s in solvers]).statistic
    assert rho_tasks >= 0.9, rho_tasks
    assert rho_solvers >= 0.9, rho_solvers
    assert abs(np.mean(list(fit.difficulties.values()))) < 1e-9  # the scale is centred on the tasks


def test_bootstrap_intervals_hold_the_estimate_and_mostly_the_truth():
    abilities, difficulties = _truth(10, 40, seed=5)
    fit = fit_1pl(simulate(abilities, difficulties, attempts=10, seed=6), bootstrap=60, seed=7)
    assert set(fit.difficulty_intervals) == set(difficulties) and set(fit.ability_intervals) == set(abilities)
    for task, (low, high) in fit.difficulty_intervals.items():
        assert low < high and low - 0.3 <= fit.difficulties[task] <= high + 0.3
    # The truth is on another zero point: compare after centring it as the fit does.
    centre = np.mean(list(difficulties.values()))
    covered = [low <= difficulties[t] - centre <= high for t, (low, high) in fit.difficulty_intervals.items()]
    assert np.mean(covered) >= 0.75


def test_a_task_everyone_passes_is_finite_and_easiest():
    cells = [Cell(f"s{i}", "easy", 5, 5) for i in range(4)]
    cells += [Cell(f"s{i}", "mixed", 5, i + 1) for i in range(4)]
    cells += [Cell(f"s{i}", "hard", 5, 0) for i in range(4)]
    fit = fit_1pl(cells, bootstrap=0)
    assert all(np.isfinite(v) for v in fit.difficulties.values())
    assert fit.difficulties["easy"] < fit.difficulties["mixed"] < fit.difficulties["hard"]
    assert fit.abilities["s3"] > fit.abilities["s0"]


def test_repeated_cells_are_merged_and_bad_counts_are_named():
    split = fit_1pl([Cell("a", "t", 3, 1), Cell("a", "t", 2, 1), Cell("b", "t", 5, 4), Cell("a", "u", 5, 0),
                     Cell("b", "u", 5, 3)], bootstrap=0)  # fmt: skip
    whole = fit_1pl([Cell("a", "t", 5, 2), Cell("b", "t", 5, 4), Cell("a", "u", 5, 0), Cell("b", "u", 5, 3)],
                    bootstrap=0)  # fmt: skip
    assert split.difficulties == pytest.approx(whole.difficulties) and split.attempts == 20
    with pytest.raises(ValueError, match=r"cell 1 \(b, t\): more passes than attempts"):
        fit_1pl([Cell("a", "t", 2, 1), Cell("b", "t", 2, 3)])
    with pytest.raises(ValueError, match="no attempts"):
        fit_1pl([Cell("a", "t", 0, 0)])
    with pytest.raises(ValueError, match="regularisation"):
        fit_1pl([Cell("a", "t", 2, 1)], regularisation=0)


def test_bands_follow_the_expected_pass_rate_at_the_target_ability():
    assert band_of(0.97) == TOO_EASY and band_of(0.95) == TOO_EASY
    assert band_of(0.5) == LEARNABLE and band_of(0.06) == LEARNABLE
    assert band_of(0.05) == TOO_HARD
    abilities, difficulties = _truth(8, 30, seed=9)
    fit = fit_1pl(simulate(abilities, difficulties, attempts=8, seed=10), bootstrap=0)
    easiest = min(fit.difficulties, key=fit.difficulties.get)
    hardest = max(fit.difficulties, key=fit.difficulties.get)
    assert fit.band(easiest, ability=fit.difficulties[easiest] + 4) == TOO_EASY
    assert fit.band(hardest, ability=fit.difficulties[hardest] - 4) == TOO_HARD
    assert fit.expected_pass_rate(hardest, fit.difficulties[hardest]) == pytest.approx(0.5)
