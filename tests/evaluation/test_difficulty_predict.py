"""The difficulty predictor: features read off a task, and a cross-validated error
that beats guessing the mean when difficulty does follow the features."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evaluation.difficulty.predict import MIN_TRAIN, TaskFeatures, code_shape, feature_matrix, predict_difficulty


def test_code_shape_counts_lines_nodes_depth_and_branches():
    lines, nodes, depth, cyclomatic = code_shape(
        "def f(xs):\n    total = 0\n    for x in xs:\n"
        "        if x > 0 and x < 9:\n            total += x\n    return total\n"
    )
    assert lines == 6 and nodes > 10 and depth >= 5
    assert cyclomatic == 4  # one path, plus the loop, the if and the `and`
    assert code_shape("def broken(:") == (0, 0, 0, 0)


def _synthetic(n: int, seed: int) -> tuple[list[TaskFeatures], dict[str, float]]:
    """Tasks whose difficulty grows with the reference's branching and their tests' count, plus noise."""
    rng = random.Random(seed)
    tasks, truth = [], {}
    for i in range(n):
        branches = rng.randrange(0, 8)
        body = "".join(f"    if x == {b}:\n        return {b}\n" for b in range(branches))
        hidden = rng.randrange(1, 12)
        tasks.append(TaskFeatures(key=f"t{i}", statement="word " * rng.randrange(10, 80), suite_kind="assertions",
                                  visible_tests=1, hidden_tests=hidden, reference=f"def f(x):\n{body}    return -1\n",
                                  tags=("easy",) if branches < 2 else ("graphs",), mutation_score=None))  # fmt: skip
        truth[f"t{i}"] = 0.6 * branches + 0.1 * hidden - 2 + rng.gauss(0, 0.2)
    return tasks, truth


def test_the_predictor_beats_the_mean_and_ranks_unseen_tasks():
    tasks, truth = _synthetic(120, seed=4)
    measured = {k: v for k, v in truth.items() if int(k[1:]) < 90}
    prediction = predict_difficulty(tasks, measured, folds=5, seed=0)
    assert prediction.trained_on == 90 and prediction.folds == 5
    assert prediction.cv_mae < 0.5 * prediction.baseline_mae
    assert prediction.cv_spearman > 0.8
    unseen = sorted(prediction.predicted)
    assert len(unseen) == 30 and not set(unseen) & set(measured)
    rho = np.corrcoef([truth[k] for k in unseen], [prediction.predicted[k] for k in unseen])[0, 1]
    assert rho > 0.8
    assert "reference_cyclomatic" in prediction.importances


def test_too_few_measured_tasks_predict_nothing_and_unknown_figures_are_missing_not_zero():
    tasks, truth = _synthetic(20, seed=1)
    few = dict(list(truth.items())[: MIN_TRAIN - 1])
    prediction = predict_difficulty(tasks, few)
    assert prediction.predicted == {} and prediction.cv_mae is None and prediction.trained_on == MIN_TRAIN - 1
    matrix = feature_matrix(tasks[:2], tags=["easy"])
    names_at = prediction.features.index("mutation_score")
    assert np.isnan(matrix[0, names_at])


@pytest.mark.parametrize("folds", [2, 10])
def test_folds_are_capped_by_the_training_set(folds):
    tasks, truth = _synthetic(12, seed=2)
    prediction = predict_difficulty(tasks, dict(list(truth.items())[:9]), folds=folds)
    assert prediction.folds == min(folds, 9) and len(prediction.predicted) == 3
