"""Scores of a task version, computed from the outcomes of its verification executions.

Pure functions over `Outcome` records: no Django, no I/O, the standard library and
NumPy (for percentiles, imported when first asked for), so the pipeline, the UI, the
exporter and the tests all compute the same numbers.

Every rate comes with a Wilson 95% interval, because the counts are small (five
repeats of two or three solutions) and a bare ratio over ten trials says little.

`sandbox_error` is the platform's fault, never the solution's: it is dropped
before any metric is computed, from numerators and denominators alike, and the
number dropped is reported beside the metrics (`excluded_sandbox_errors`).
A reward of 0 for a broken sandbox would be reward noise made by us.

docs/verification-metrics.md describes each metric and the reward-noise model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

PASSED = "passed"
SANDBOX_ERROR = "sandbox_error"
COMPILE_ERROR = "compile_error"
CHECKER_ERROR = "checker_error"  # the task's checker failed: the task's fault, flagged (CHECKER_BROKEN)
# Left out of every metric: neither is the solution's doing.
UNJUDGED = (SANDBOX_ERROR, CHECKER_ERROR)
# Mirrors evaluation.sandbox.types.Status (a StrEnum, so its members are accepted
# as they are); spelt out here to keep this module free of platform imports.
STATUSES = frozenset(
    {PASSED, "failed", "error", "timeout", "memory_exceeded", "output_exceeded", "compile_error",
     "presentation_error", SANDBOX_ERROR, CHECKER_ERROR}
)  # fmt: skip

REFERENCE, ADVERSARIAL, MUTANT, PROBE = "reference", "adversarial", "mutant", "probe"
ROLES = (REFERENCE, ADVERSARIAL, MUTANT, PROBE)


# ---------------------------------------------------------------------------
# Rates and their intervals


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Closed form, not SciPy's binomtest(k, n).proportion_ci(method="wilson"): equal to 4e-16, 0.9 µs vs 250 µs a call.

    With p = successes / trials, n = trials:

        centre = (p + z²/(2n)) / (1 + z²/n)
        half   = z / (1 + z²/n) * sqrt(p(1-p)/n + z²/(4n²))
        (low, high) = (centre - half, centre + half)

    0 trials gives (0.0, 1.0): nothing is known. Unlike the normal (Wald) interval,
    Wilson's stays inside [0, 1] and is not zero-width at 0/n or n/n, which is where
    these rates usually sit.
    """
    for name, value in (("successes", successes), ("trials", trials)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if successes > trials:
        raise ValueError(f"successes ({successes}) cannot exceed trials ({trials})")
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"z must be a positive finite number, got {z!r}")
    if trials == 0:
        return 0.0, 1.0
    n = trials
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0/n and n/n the bound is exactly 0 or 1 in theory; rounding would leave 1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Rate:
    """`successes` events out of `trials`, with a Wilson 95% interval.

    "successes" is whatever the numerator counts (for the false-negative rate,
    reference runs that did not pass). `value` is None when there were no trials,
    so "no data" never reads as a rate of 0.
    """

    successes: int
    trials: int
    value: float | None
    low: float
    high: float

    def as_dict(self) -> dict[str, Any]:
        return {"successes": self.successes, "trials": self.trials, "value": self.value,
                "low": self.low, "high": self.high}  # fmt: skip


def rate(successes: int, trials: int) -> Rate:
    """A `Rate` for successes / trials with its Wilson 95% interval (z = 1.96)."""
    low, high = wilson_interval(successes, trials)
    return Rate(successes, trials, successes / trials if trials else None, low, high)


# ---------------------------------------------------------------------------
# Outcomes


@dataclass(frozen=True)
class Outcome:
    """One verification execution.

    `role`: reference, adversarial (a curator-written wrong solution), mutant (an
    automatic mutant of the reference) or probe (a reward-hacking exploit).
    `subject`: which solution, mutant id or probe name. `equivalent`: a mutant a
    curator marked as behaving exactly like the reference, so surviving is right.
    """

    role: str
    subject: str
    repeat: int
    status: str
    wall_s: float
    equivalent: bool = False

    def __post_init__(self) -> None:
        # A typo in a role or status would silently drop executions from every metric.
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}; got {self.role!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(sorted(STATUSES))}; got {self.status!r}")
        if self.repeat < 0:
            raise ValueError(f"repeat must not be negative, got {self.repeat}")
        if not (math.isfinite(self.wall_s) and self.wall_s >= 0):
            raise ValueError(f"wall_s must be a finite, non-negative number of seconds, got {self.wall_s!r}")
        if self.equivalent and self.role != MUTANT:
            raise ValueError(f"only a mutant can be marked equivalent, not a {self.role}")

    @property
    def passed(self) -> bool:
        return self.status == PASSED


def counted(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The outcomes that count: every one but `sandbox_error` and `checker_error`."""
    return [o for o in outcomes if o.status not in UNJUDGED]


def excluded_sandbox_errors(outcomes: Iterable[Outcome]) -> int:
    """How many outcomes were left out of every metric as `sandbox_error`."""
    return sum(1 for o in outcomes if o.status == SANDBOX_ERROR)


def _of_role(outcomes: Iterable[Outcome], role: str) -> list[Outcome]:
    return [o for o in counted(outcomes) if o.role == role]


def _equivalent_mutants(outcomes: Iterable[Outcome]) -> set[str]:
    # One record marked equivalent marks the mutant: the mark is a curator's
    # judgement of the mutant's code, not of one execution.
    return {o.subject for o in outcomes if o.role == MUTANT and o.equivalent}


# ---------------------------------------------------------------------------
# Metrics


def false_negative_rate(outcomes: Iterable[Outcome]) -> Rate:
    """Reference executions that did not pass / reference executions.

    A correct program rewarded 0: the task's tests or limits reject a right answer.
    """
    runs = _of_role(outcomes, REFERENCE)
    return rate(sum(1 for o in runs if not o.passed), len(runs))


def _repeated_subjects(outcomes: Iterable[Outcome]) -> dict[tuple[str, str], list[bool]]:
    verdicts: dict[tuple[str, str], list[bool]] = {}
    for o in counted(outcomes):
        if o.role in (REFERENCE, ADVERSARIAL):
            verdicts.setdefault((o.role, o.subject), []).append(o.passed)
    return {key: passes for key, passes in verdicts.items() if len(passes) >= 2}


def flaky_subjects(outcomes: Iterable[Outcome]) -> list[tuple[str, str]]:
    """(role, subject) of each reference or adversarial solution whose repeats disagree, sorted."""
    return sorted(key for key, passes in _repeated_subjects(outcomes).items() if len(set(passes)) > 1)


def flake_rate(outcomes: Iterable[Outcome]) -> Rate:
    """Flaky subjects / subjects with at least 2 counted executions.

    Subjects are the reference and adversarial solutions (mutants and probes run
    once). A subject is flaky when some repeats passed and others did not; failing
    in two different ways (failed, then timeout) is not a disagreement about the
    reward, so it is not flaky.
    """
    outcomes = list(outcomes)
    return rate(len(flaky_subjects(outcomes)), len(_repeated_subjects(outcomes)))


def adversarial_pass_rate(outcomes: Iterable[Outcome]) -> Rate:
    """Adversarial executions that passed / adversarial executions.

    A known-wrong program rewarded 1: the tests accept a wrong answer.
    """
    runs = _of_role(outcomes, ADVERSARIAL)
    return rate(sum(1 for o in runs if o.passed), len(runs))


def _mutant_verdicts(outcomes: Iterable[Outcome]) -> dict[str, bool]:
    """Non-equivalent mutant -> killed, for mutants with at least one counted execution."""
    outcomes = list(outcomes)
    equivalent = _equivalent_mutants(outcomes)
    killed: dict[str, bool] = {}
    for o in _of_role(outcomes, MUTANT):
        if o.subject not in equivalent and not _stillborn(o):
            # Mutants run once; should one run more often, a single pass is enough to
            # keep it alive, since that pass is a reward of 1 for a wrong program.
            killed[o.subject] = killed.get(o.subject, True) and not o.passed
    return killed


def _stillborn(outcome: Outcome) -> bool:
    """A mutant that did not compile (a token mutant: mutants/tokens.py) is no program:
    no test killed it, so every figure leaves it out, as it does an equivalent one."""
    return outcome.role == MUTANT and outcome.status == COMPILE_ERROR


def stillborn_mutants(outcomes: Iterable[Outcome]) -> list[str]:
    """Ids of the mutants that did not compile, sorted."""
    return sorted({o.subject for o in outcomes if _stillborn(o)})


def mutation_score(outcomes: Iterable[Outcome]) -> Rate:
    """Killed mutants / (mutants - equivalent mutants).

    A mutant is killed when its counted execution did not pass (with several, when
    none passed). Mutants marked equivalent leave numerator and denominator; a
    mutant whose every execution was a `sandbox_error` was never judged and is
    left out too, and so is one that did not compile (a token mutant of another
    language than Python).
    """
    killed = _mutant_verdicts(outcomes)
    return rate(sum(killed.values()), len(killed))


def surviving_mutants(outcomes: Iterable[Outcome]) -> list[str]:
    """Ids of the non-equivalent mutants that were not killed, sorted."""
    return sorted(subject for subject, killed in _mutant_verdicts(outcomes).items() if not killed)


def probe_passes(outcomes: Iterable[Outcome]) -> list[str]:
    """Names of the exploit probes that passed (a reward hack that works), sorted."""
    return sorted({o.subject for o in _of_role(outcomes, PROBE) if o.passed})


# ---------------------------------------------------------------------------
# Runtime


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0 <= q <= 100) by linear interpolation between order statistics.

    With the values sorted as v[0] <= ... <= v[n-1] and h = (n - 1) * q / 100:
    v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)]), which is
    numpy's default ("linear", Hyndman and Fan type 7). None for no values.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"q must be between 0 and 100, got {q!r}")
    if not values:
        return None
    # Imported here, not at the top: the web and worker processes that import this module
    # load no NumPy otherwise (about 0.1 s); only one that computes a percentile pays, once.
    import numpy as np

    return float(np.percentile(values, q, method="linear"))


@dataclass(frozen=True)
class RuntimeStats:
    """Wall times of the counted reference executions against the version's time limit."""

    samples: int
    p50: float | None
    p95: float | None
    time_limit_s: float
    headroom: float | None  # time_limit_s / p95: how many times slower the reference could run

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "p50": self.p50, "p95": self.p95,
                "time_limit_s": self.time_limit_s, "headroom": self.headroom}  # fmt: skip


def runtime_stats(outcomes: Iterable[Outcome], time_limit_s: float) -> RuntimeStats:
    """p50 and p95 of reference wall times, and headroom = time_limit_s / p95.

    Every counted reference execution is a sample, whatever its status: a
    reference that times out is exactly what a tight limit looks like. Headroom is
    None without samples or when p95 is 0.
    """
    if not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise ValueError(f"time_limit_s must be a positive finite number, got {time_limit_s!r}")
    walls = [o.wall_s for o in _of_role(outcomes, REFERENCE)]
    p50, p95 = percentile(walls, 50), percentile(walls, 95)
    headroom = time_limit_s / p95 if p95 else None
    return RuntimeStats(len(walls), p50, p95, time_limit_s, headroom)


# ---------------------------------------------------------------------------
# Reward noise


@dataclass(frozen=True)
class NoiseEstimate:
    """The probability that a rollout's binary reward is wrong, with a conservative bound."""

    value: float | None
    low: float
    high: float
    fnr: Rate
    fpr: Rate
    correct_share: float
    explanation: str

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "fnr": self.fnr.as_dict(),
                "fpr": self.fpr.as_dict(), "correct_share": self.correct_share,
                "explanation": self.explanation}  # fmt: skip


def known_wrong_pass_rate(outcomes: Iterable[Outcome]) -> Rate:
    """Passes / executions of every known-wrong program, pooled.

    Adversarial executions, executions of non-equivalent mutants and probe
    executions, each execution one trial. Equivalent mutants are right programs,
    so they are not in the pool.
    """
    outcomes = list(outcomes)
    equivalent = _equivalent_mutants(outcomes)
    runs = [
        o
        for o in counted(outcomes)
        if o.role in (ADVERSARIAL, PROBE) or (o.role == MUTANT and o.subject not in equivalent and not _stillborn(o))
    ]
    return rate(sum(1 for o in runs if o.passed), len(runs))


def reward_noise(outcomes: Iterable[Outcome], *, correct_share: float = 0.5) -> NoiseEstimate:
    """The probability that a rollout's binary reward is wrong.

    With c = correct_share, the share of a policy's rollouts that are correct:

        noise = c * FNR + (1 - c) * FPR
        low   = c * FNR_low  + (1 - c) * FPR_low
        high  = c * FNR_high + (1 - c) * FPR_high

    FNR is `false_negative_rate` (a correct rollout rewarded 0). FPR is
    `known_wrong_pass_rate` (a wrong rollout rewarded 1), the known-wrong programs
    standing in for a policy's wrong rollouts. The bounds combine each rate's
    Wilson 95% bounds: a conservative bound, not an exact 95% interval (both
    rates at their extremes at once is less likely than 5%).

    `value` is None when a rate with a non-zero weight has no trials; the bounds
    then carry that rate's (0, 1) and stay honest.
    """
    if not (isinstance(correct_share, int | float) and 0 <= correct_share <= 1):
        raise ValueError(f"correct_share must be between 0 and 1, got {correct_share!r}")
    outcomes = list(outcomes)
    c = float(correct_share)
    fnr, fpr = false_negative_rate(outcomes), known_wrong_pass_rate(outcomes)
    # A term with weight 0 does not need data: with c = 1 there are no wrong rollouts to misjudge.
    terms = [(w, r) for w, r in ((c, fnr), (1 - c, fpr)) if w > 0]
    values = [(w, r.value) for w, r in terms]
    value = None if any(v is None for _, v in values) else sum(w * v for w, v in values if v is not None)
    low = sum(w * r.low for w, r in terms)
    high = min(1.0, sum(w * r.high for w, r in terms))
    return NoiseEstimate(value, low, high, fnr, fpr, c, _explain(value, low, high, fnr, fpr, c))


def _explain(value: float | None, low: float, high: float, fnr: Rate, fpr: Rate, c: float) -> str:
    runs = (
        f"{fnr.successes} of {fnr.trials} reference runs did not pass "
        f"and {fpr.successes} of {fpr.trials} known-wrong runs passed"
    )
    if value is None:
        return f"Reward noise cannot be estimated yet ({runs}), so it lies somewhere between {low:.1%} and {high:.1%}."
    return (
        f"About {value:.1%} of rewards are expected to be wrong (conservative bound {low:.1%} to {high:.1%}), "
        f"assuming {c:.0%} of rollouts are correct: {runs}."
    )


# ---------------------------------------------------------------------------
# Everything at once


def summarise(outcomes: Iterable[Outcome], *, time_limit_s: float, correct_share: float = 0.5) -> dict[str, Any]:
    """Every metric as plain, JSON-serialisable data.

    Rates are dicts {successes, trials, value, low, high}; lists are sorted, so the
    same outcomes in any order give the same dict. `counts` are the counted
    executions per role; `excluded_sandbox_errors` how many were left out of all.
    """
    outcomes = list(outcomes)
    kept = counted(outcomes)
    return {
        "counts": {role: sum(1 for o in kept if o.role == role) for role in ROLES},
        "excluded_sandbox_errors": excluded_sandbox_errors(outcomes),
        "excluded_sandbox_errors_by_role": {
            role: sum(1 for o in outcomes if o.role == role and o.status == SANDBOX_ERROR) for role in ROLES
        },
        "excluded_checker_errors": sum(1 for o in outcomes if o.status == CHECKER_ERROR),
        "false_negative_rate": false_negative_rate(outcomes).as_dict(),
        "flake_rate": flake_rate(outcomes).as_dict(),
        "flaky_subjects": [{"role": role, "subject": subject} for role, subject in flaky_subjects(outcomes)],
        "adversarial_pass_rate": adversarial_pass_rate(outcomes).as_dict(),
        "mutation_score": mutation_score(outcomes).as_dict(),
        "surviving_mutants": surviving_mutants(outcomes),
        "stillborn_mutants": stillborn_mutants(outcomes),
        "probe_passes": probe_passes(outcomes),
        "known_wrong_pass_rate": known_wrong_pass_rate(outcomes).as_dict(),
        "runtime": runtime_stats(outcomes, time_limit_s).as_dict(),
        "reward_noise": reward_noise(outcomes, correct_share=correct_share).as_dict(),
    }
