"""pass@k from solver attempts: the unbiased estimator and an interval for it.

A solver made n attempts at a task and c of them passed. pass@k is the chance
that at least one of k attempts drawn without replacement from those n passes:

    pass@k = 1 - C(n - c, k) / C(n, k)

(Chen et al.'s unbiased estimator). It is computed as a running product,

    1 - prod_{i = n - c + 1}^{n} (1 - k / i),

which never forms the huge binomials. It needs n >= k: with fewer attempts
there is no unbiased estimate, and None is returned rather than a guess.

The interval: a task's pass@k is 1 - (1 - p)^k for its per-attempt pass rate p,
and that map is increasing in p. So the Wilson 95% interval of p = c / n
(metrics.wilson_interval), pushed through the map, is an interval for pass@k
with the same coverage. At k = 1 it is the Wilson interval itself. The interval
is for the task's true pass@k; with k close to n the unbiased estimate can fall
outside it (at k = n the estimate is just "did any attempt pass").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.verification.figures import wilson_interval

DEFAULT_KS = (1, 5, 10)


def _check_counts(attempts: int, passes: int) -> None:
    for name, value in (("attempts", attempts), ("passes", passes)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if passes > attempts:
        raise ValueError(f"passes ({passes}) cannot exceed attempts ({attempts})")


def pass_at_k(attempts: int, passes: int, k: int) -> float | None:
    """The unbiased pass@k estimate from `passes` out of `attempts`; None when attempts < k."""
    _check_counts(attempts, passes)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if attempts < k:
        return None
    if attempts - passes < k:
        return 1.0  # every draw of k attempts holds a pass
    miss_all = 1.0
    for i in range(attempts - passes + 1, attempts + 1):
        miss_all *= 1.0 - k / i
    return 1.0 - miss_all


def pass_at_k_interval(attempts: int, passes: int, k: int) -> tuple[float, float]:
    """A 95% interval for pass@k: Wilson's for the per-attempt rate, mapped by 1 - (1 - p)^k."""
    _check_counts(attempts, passes)
    low, high = wilson_interval(passes, attempts)
    return 1.0 - (1.0 - low) ** k, 1.0 - (1.0 - high) ** k


@dataclass(frozen=True)
class PassAtK:
    k: int
    value: float | None  # None: fewer attempts than k
    low: float
    high: float

    def as_dict(self) -> dict:
        return {"k": self.k, "value": self.value, "low": self.low, "high": self.high}


def pass_at_ks(attempts: int, passes: int, ks: Iterable[int] = DEFAULT_KS) -> list[PassAtK]:
    """pass@k with its interval for each k in `ks`."""
    return [PassAtK(k, pass_at_k(attempts, passes, k), *pass_at_k_interval(attempts, passes, k)) for k in ks]
