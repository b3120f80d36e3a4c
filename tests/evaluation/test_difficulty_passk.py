from __future__ import annotations

import itertools
import math
import random

import pytest

from evaluation.difficulty.passk import pass_at_k, pass_at_k_interval, pass_at_ks
from evaluation.verification.figures import wilson_interval


def _by_enumeration(attempts: int, passes: int, k: int) -> float:
    """pass@k by definition: the share of k-subsets of the attempts that hold a pass."""
    outcomes = [True] * passes + [False] * (attempts - passes)
    subsets = list(itertools.combinations(range(attempts), k))
    return sum(any(outcomes[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize(
    ("attempts", "passes", "k"), [(10, 3, 1), (10, 3, 5), (10, 0, 5), (12, 1, 10), (6, 6, 2), (7, 2, 7)]
)
def test_the_estimator_is_the_share_of_k_subsets_that_hold_a_pass(attempts, passes, k):
    assert pass_at_k(attempts, passes, k) == pytest.approx(_by_enumeration(attempts, passes, k), abs=1e-12)


def test_pass_at_1_is_the_pass_rate_and_it_grows_with_k():
    assert pass_at_k(20, 7, 1) == pytest.approx(0.35)
    values = [pass_at_k(20, 7, k) for k in (1, 2, 5, 10, 14)]
    assert values == sorted(values) and values[-1] == 1.0  # 13 failures: any 14 attempts hold a pass


def test_it_is_unbiased_over_repeated_sampling():
    rng = random.Random(3)
    p, n, k = 0.2, 10, 5
    estimates = [pass_at_k(n, sum(rng.random() < p for _ in range(n)), k) for _ in range(20000)]
    assert sum(estimates) / len(estimates) == pytest.approx(1 - (1 - p) ** k, abs=0.01)


def test_fewer_attempts_than_k_give_no_estimate():
    assert pass_at_k(4, 2, 5) is None
    (at_10,) = pass_at_ks(4, 2, ks=(10,))
    assert at_10.value is None and 0 < at_10.low < at_10.high < 1


def test_the_interval_is_wilsons_mapped_through_1_minus_1_minus_p_to_the_k():
    low, high = wilson_interval(3, 10)
    assert pass_at_k_interval(10, 3, 1) == pytest.approx((low, high))
    assert pass_at_k_interval(10, 3, 5) == pytest.approx((1 - (1 - low) ** 5, 1 - (1 - high) ** 5))
    for k in (1, 5, 10):
        lo, hi = pass_at_k_interval(30, 9, k)
        assert lo <= pass_at_k(30, 9, k) <= hi


@pytest.mark.parametrize(("attempts", "passes", "k"), [(3, 4, 1), (-1, 0, 1), (5, 1, 0), (5, 1.0, 1), (True, 0, 1)])
def test_bad_counts_are_refused_with_a_message(attempts, passes, k):
    with pytest.raises(ValueError) as error:
        pass_at_k(attempts, passes, k)
    assert any(word in str(error.value) for word in ("attempts", "passes", "k must"))


def test_every_k_comes_with_value_and_interval():
    rows = [r.as_dict() for r in pass_at_ks(10, 4)]
    assert [r["k"] for r in rows] == [1, 5, 10]
    assert all(r["low"] <= r["value"] <= r["high"] for r in rows[:2]) and not math.isnan(rows[0]["value"])
    # At k = n the estimate is "did any attempt pass" (1.0 here); the interval, for the
    # task's true pass@10, need not reach it.
    assert rows[2]["value"] == 1.0 and rows[2]["high"] < 1.0
