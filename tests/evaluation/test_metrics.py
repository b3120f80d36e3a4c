"""Scores of a task version from its verification outcomes: pure functions, no database."""

from __future__ import annotations

import json
import random

import pytest

from evaluation.sandbox.types import Status
from evaluation.verification.figures import (
    Outcome,
    adversarial_pass_rate,
    excluded_sandbox_errors,
    false_negative_rate,
    flake_rate,
    flaky_subjects,
    known_wrong_pass_rate,
    mutation_score,
    percentile,
    probe_passes,
    rate,
    reward_noise,
    runtime_stats,
    summarise,
    surviving_mutants,
    wilson_interval,
)

TIME_LIMIT_S = 2.0


def run(role, subject, status, *, repeat=0, wall_s=0.1, equivalent=False):
    return Outcome(role=role, subject=subject, repeat=repeat, status=status, wall_s=wall_s, equivalent=equivalent)


def version_outcomes():
    """A version hand-checked below:

    reference  ref_a: 5 passes; ref_b: 4 passes and 1 failure (flaky)   -> FNR 1/10
    adversarial  adv_off_by_one: 5 failures; adv_slow: 1 pass, 4 timeouts (flaky) -> 1/10 pass
    mutants  m1 failed, m2 failed, m3 passed, m4 error, m5 passed but equivalent -> 3 of 4 killed
    probes  sys_exit failed, always_eq passed
    known-wrong pool: 10 adversarial + 4 mutants + 2 probes = 16 runs, 3 passed -> FPR 3/16
    reference wall times 0.1, 0.2, ..., 1.0
    """
    walls = iter([0.3, 0.1, 1.0, 0.5, 0.2, 0.9, 0.4, 0.8, 0.6, 0.7])
    outcomes = [run("reference", "ref_a", "passed", repeat=r, wall_s=next(walls)) for r in range(5)]
    outcomes += [run("reference", "ref_b", "passed", repeat=r, wall_s=next(walls)) for r in range(4)]
    outcomes.append(run("reference", "ref_b", "failed", repeat=4, wall_s=next(walls)))
    outcomes += [run("adversarial", "adv_off_by_one", "failed", repeat=r) for r in range(5)]
    outcomes.append(run("adversarial", "adv_slow", "passed", repeat=0))
    outcomes += [run("adversarial", "adv_slow", "timeout", repeat=r, wall_s=2.0) for r in range(1, 5)]
    outcomes += [run("mutant", "m1", "failed"), run("mutant", "m2", "failed"), run("mutant", "m3", "passed"),
                 run("mutant", "m4", "error"), run("mutant", "m5", "passed", equivalent=True)]  # fmt: skip
    outcomes += [run("probe", "sys_exit", "failed"), run("probe", "always_eq", "passed")]
    return outcomes


def sandbox_errors():
    """Infrastructure failures in every role, including a mutant that never ran and a new reference subject."""
    return [
        run("reference", "ref_a", "sandbox_error", repeat=5, wall_s=9.0),
        run("reference", "ref_c", "sandbox_error", repeat=0, wall_s=9.0),
        run("reference", "ref_c", "sandbox_error", repeat=1, wall_s=9.0),
        run("adversarial", "adv_off_by_one", "sandbox_error", repeat=5),
        run("adversarial", "adv_new", "sandbox_error", repeat=0),
        run("adversarial", "adv_new", "sandbox_error", repeat=1),
        run("mutant", "m6", "sandbox_error"),
        run("probe", "conftest_rewrite", "sandbox_error"),
    ]


# --- Wilson interval ---------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (1, 10, 0.0179, 0.4042),
     (3, 16, 0.0659, 0.4301), (0, 1, 0.0, 0.7935)],
)  # fmt: skip
def test_wilson_interval_matches_published_values(successes, trials, low, high):
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)  # fmt: skip
def test_wilson_interval_matches_newcombes_worked_examples(successes, trials, low, high):
    # Newcombe (1998), Statistics in Medicine 17:857-872, Table II, method 3 (score, no continuity correction).
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_agrees_with_scipy_on_a_grid_of_counts_and_confidence_levels():
    """The closed form is kept over SciPy for speed (see its docstring): it must give SciPy's bounds."""
    from scipy.stats import binomtest, norm

    for confidence in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        z = float(norm.ppf(0.5 + confidence / 2))
        for trials in (1, 2, 3, 5, 10, 16, 49, 100, 1000):
            for successes in sorted({*range(min(trials, 12) + 1), trials // 3, trials // 2, trials - 1, trials}):
                expected = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
                low, high = wilson_interval(successes, trials, z=z)
                assert abs(low - expected.low) <= 1e-12 and abs(high - expected.high) <= 1e-12, (successes, trials)


def test_wilson_interval_is_exactly_0_or_1_at_the_extremes():
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0


def test_wilson_interval_with_no_trials_knows_nothing():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_a_wider_z_gives_a_wider_interval():
    narrow, wide = wilson_interval(5, 10, z=1.0), wilson_interval(5, 10, z=2.58)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


@pytest.mark.parametrize(
    ("successes", "trials", "message"),
    [(-1, 10, "successes must not be negative"), (0, -1, "trials must not be negative"),
     (11, 10, r"successes \(11\) cannot exceed trials \(10\)"), (1.5, 10, "successes must be an integer"),
     (True, 10, "successes must be an integer")],
)  # fmt: skip
def test_wilson_interval_rejects_impossible_counts(successes, trials, message):
    with pytest.raises(ValueError, match=message):
        wilson_interval(successes, trials)


@pytest.mark.parametrize("z", [0.0, -1.96, float("nan"), float("inf")])
def test_wilson_interval_rejects_a_meaningless_z(z):
    with pytest.raises(ValueError, match="z must be a positive finite number"):
        wilson_interval(1, 10, z=z)


def test_a_rate_without_trials_has_no_value_rather_than_zero():
    empty = rate(0, 0)
    assert (empty.value, empty.low, empty.high) == (None, 0.0, 1.0)
    assert rate(1, 4).value == 0.25


# --- Outcome validation ------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"role": "solution"}, "role must be one of"), ({"status": "pass"}, "status must be one of"),
     ({"repeat": -1}, "repeat must not be negative"), ({"wall_s": -0.1}, "wall_s must be"),
     ({"wall_s": float("nan")}, "wall_s must be"), ({"equivalent": True}, "only a mutant can be marked equivalent")],
)  # fmt: skip
def test_an_outcome_with_a_typo_is_rejected_rather_than_silently_dropped(kwargs, message):
    fields = {"role": "reference", "subject": "ref", "repeat": 0, "status": "passed", "wall_s": 0.1} | kwargs
    with pytest.raises(ValueError, match=message):
        Outcome(**fields)


def test_an_outcome_accepts_the_sandbox_status_enum():
    outcomes = [run("reference", "ref", Status.PASSED), run("reference", "ref", Status.SANDBOX_ERROR, repeat=1)]
    assert false_negative_rate(outcomes) == rate(0, 1)
    assert excluded_sandbox_errors(outcomes) == 1


# --- The metrics on the hand-checked version ---------------------------------


def test_the_false_negative_rate_counts_reference_runs_that_did_not_pass():
    assert false_negative_rate(version_outcomes()) == rate(1, 10)


@pytest.mark.parametrize("status", ["failed", "error", "timeout", "memory_exceeded", "output_exceeded"])
def test_every_non_passing_status_of_the_reference_is_a_false_negative(status):
    outcomes = [run("reference", "ref", "passed"), run("reference", "ref", status, repeat=1)]
    assert false_negative_rate(outcomes) == rate(1, 2)


def test_subjects_whose_repeats_disagree_are_flaky():
    outcomes = version_outcomes()
    assert flaky_subjects(outcomes) == [("adversarial", "adv_slow"), ("reference", "ref_b")]
    assert flake_rate(outcomes) == rate(2, 4)


def test_failing_in_different_ways_is_not_flaky():
    outcomes = [run("adversarial", "adv", s, repeat=r) for r, s in enumerate(["failed", "timeout", "error"])]
    assert flaky_subjects(outcomes) == []
    assert flake_rate(outcomes) == rate(0, 1)


def test_a_subject_run_once_cannot_be_judged_flaky_and_leaves_the_denominator():
    outcomes = [run("reference", "once", "failed"), run("reference", "twice", "passed"),
                run("reference", "twice", "failed", repeat=1)]  # fmt: skip
    assert flake_rate(outcomes) == rate(1, 1)


def test_mutants_and_probes_are_not_subjects_of_the_flake_rate():
    outcomes = [run("mutant", "m", "passed"), run("mutant", "m", "failed", repeat=1), run("probe", "p", "passed")]
    assert flake_rate(outcomes) == rate(0, 0)


def test_the_same_subject_name_in_two_roles_is_two_subjects():
    outcomes = [run("reference", "x", "passed"), run("reference", "x", "passed", repeat=1),
                run("adversarial", "x", "failed"), run("adversarial", "x", "failed", repeat=1)]  # fmt: skip
    assert flake_rate(outcomes) == rate(0, 2)


def test_the_adversarial_pass_rate_counts_wrong_solutions_that_passed():
    assert adversarial_pass_rate(version_outcomes()) == rate(1, 10)


def test_the_mutation_score_counts_killed_mutants_among_the_non_equivalent():
    outcomes = version_outcomes()
    assert mutation_score(outcomes) == rate(3, 4)
    assert surviving_mutants(outcomes) == ["m3"]


def test_marking_a_mutant_equivalent_takes_it_out_of_the_denominator():
    outcomes = [run("mutant", "m1", "failed"), run("mutant", "m2", "passed")]
    assert mutation_score(outcomes) == rate(1, 2)
    assert surviving_mutants(outcomes) == ["m2"]
    marked = [run("mutant", "m1", "failed"), run("mutant", "m2", "passed", equivalent=True)]
    assert mutation_score(marked) == rate(1, 1)
    assert surviving_mutants(marked) == []


def test_a_mutant_that_passes_in_any_run_survives():
    outcomes = [run("mutant", "m", "failed"), run("mutant", "m", "passed", repeat=1)]
    assert mutation_score(outcomes) == rate(0, 1)
    assert surviving_mutants(outcomes) == ["m"]


def test_probes_that_passed_are_named_once_each():
    outcomes = [*version_outcomes(), run("probe", "always_eq", "passed", repeat=1), run("probe", "skip", "passed")]
    assert probe_passes(outcomes) == ["always_eq", "skip"]


# --- Runtime -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([3.0], 95, 3.0), ([1.0, 2.0], 50, 1.5), ([4.0, 1.0, 3.0, 2.0], 0, 1.0),
     ([4.0, 1.0, 3.0, 2.0], 100, 4.0), ([1.0, 2.0, 3.0, 4.0], 25, 1.75), ([10.0, 20.0, 30.0], 95, 29.0)],
)  # fmt: skip
def test_percentiles_interpolate_linearly_between_order_statistics(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_the_percentile_of_nothing_is_none():
    assert percentile([], 50) is None


@pytest.mark.parametrize("q", [-1, 101])
def test_a_percentile_outside_0_to_100_is_rejected(q):
    with pytest.raises(ValueError, match="q must be between 0 and 100"):
        percentile([1.0], q)


def test_runtime_stats_give_the_reference_percentiles_and_headroom():
    stats = runtime_stats(version_outcomes(), TIME_LIMIT_S)
    # Sorted walls 0.1..1.0: p50 at h = 4.5, p95 at h = 8.55 -> 0.9 + 0.55 * 0.1.
    assert stats.samples == 10
    assert stats.p50 == pytest.approx(0.55)
    assert stats.p95 == pytest.approx(0.955)
    assert stats.headroom == pytest.approx(2.0 / 0.955)


def test_runtime_stats_without_reference_runs_or_with_a_zero_p95_have_no_headroom():
    assert runtime_stats([run("adversarial", "a", "passed")], 1.0).headroom is None
    empty = runtime_stats([], 1.0)
    assert (empty.samples, empty.p50, empty.p95, empty.headroom) == (0, None, None, None)
    assert runtime_stats([run("reference", "r", "passed", wall_s=0.0)], 1.0).headroom is None


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf"), float("nan")])
def test_runtime_stats_reject_an_impossible_time_limit(limit):
    with pytest.raises(ValueError, match="time_limit_s must be a positive finite number"):
        runtime_stats(version_outcomes(), limit)


# --- Reward noise ------------------------------------------------------------


def test_reward_noise_on_the_hand_checked_version():
    noise = reward_noise(version_outcomes())
    assert noise.fnr == rate(1, 10)
    assert noise.fpr == rate(3, 16)  # 10 adversarial + 4 non-equivalent mutants + 2 probes; 3 passed
    assert noise.value == pytest.approx(0.5 * 0.1 + 0.5 * 0.1875)  # 0.14375
    # Wilson 1/10 = (0.01788, 0.40416), 3/16 = (0.06591, 0.43009).
    assert noise.low == pytest.approx(0.5 * 0.017876 + 0.5 * 0.065915, abs=1e-5)
    assert noise.high == pytest.approx(0.5 * 0.404156 + 0.5 * 0.430094, abs=1e-5)
    assert noise.correct_share == 0.5
    assert "14.4%" in noise.explanation and "1 of 10 reference" in noise.explanation
    assert "3 of 16 known-wrong" in noise.explanation


def test_reward_noise_weights_the_two_errors_by_the_share_of_correct_rollouts():
    noise = reward_noise(version_outcomes(), correct_share=0.8)
    assert noise.value == pytest.approx(0.8 * 0.1 + 0.2 * 0.1875)
    assert noise.low == pytest.approx(0.8 * noise.fnr.low + 0.2 * noise.fpr.low)
    assert noise.high == pytest.approx(0.8 * noise.fnr.high + 0.2 * noise.fpr.high)
    assert noise.low <= noise.value <= noise.high


def test_equivalent_mutants_are_not_known_wrong_programs():
    outcomes = [run("mutant", "m1", "failed"), run("mutant", "m2", "passed", equivalent=True)]
    assert known_wrong_pass_rate(outcomes) == rate(0, 1)


def test_reward_noise_without_reference_runs_has_no_value_but_an_honest_bound():
    noise = reward_noise([run("adversarial", "a", "failed")])
    assert noise.value is None
    assert noise.high >= 0.5  # the unknown FNR may be anything up to 1
    assert "cannot be estimated" in noise.explanation


def test_a_rate_with_no_weight_needs_no_data():
    only_wrong = [run("adversarial", "a", "failed"), run("adversarial", "a", "passed", repeat=1)]
    assert reward_noise(only_wrong, correct_share=0.0).value == pytest.approx(0.5)


@pytest.mark.parametrize("share", [-0.1, 1.1, float("nan")])
def test_a_correct_share_outside_0_to_1_is_rejected(share):
    with pytest.raises(ValueError, match="correct_share must be between 0 and 1"):
        reward_noise(version_outcomes(), correct_share=share)


# --- sandbox_error -----------------------------------------------------------


def test_sandbox_errors_change_no_metric_and_are_counted_as_excluded():
    clean = version_outcomes()
    noisy = clean + sandbox_errors()
    random.Random(7).shuffle(noisy)
    assert excluded_sandbox_errors(clean) == 0
    assert excluded_sandbox_errors(noisy) == 8
    for metric in (false_negative_rate, flake_rate, flaky_subjects, adversarial_pass_rate, mutation_score,
                   surviving_mutants, probe_passes, known_wrong_pass_rate, reward_noise):  # fmt: skip
        assert metric(noisy) == metric(clean), metric.__name__
    assert runtime_stats(noisy, TIME_LIMIT_S) == runtime_stats(clean, TIME_LIMIT_S)
    before, after = summarise(clean, time_limit_s=TIME_LIMIT_S), summarise(noisy, time_limit_s=TIME_LIMIT_S)
    assert after.pop("excluded_sandbox_errors") == 8
    assert after.pop("excluded_sandbox_errors_by_role") == {"reference": 3, "adversarial": 3, "mutant": 1, "probe": 1}
    before.pop("excluded_sandbox_errors"), before.pop("excluded_sandbox_errors_by_role")
    assert after == before


def test_only_sandbox_errors_leave_every_rate_without_data():
    summary = summarise(sandbox_errors(), time_limit_s=TIME_LIMIT_S)
    for name in ("false_negative_rate", "flake_rate", "adversarial_pass_rate", "mutation_score"):
        assert summary[name]["trials"] == 0 and summary[name]["value"] is None, name
    assert summary["counts"] == {"reference": 0, "adversarial": 0, "mutant": 0, "probe": 0}
    assert summary["runtime"]["p95"] is None
    assert summary["reward_noise"]["value"] is None


# --- summarise ---------------------------------------------------------------


def test_summarise_is_plain_json():
    summary = summarise(version_outcomes(), time_limit_s=TIME_LIMIT_S)
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary
    assert summary["counts"] == {"reference": 10, "adversarial": 10, "mutant": 5, "probe": 2}
    assert summary["excluded_sandbox_errors"] == 0
    assert summary["false_negative_rate"] == rate(1, 10).as_dict()
    assert set(summary["false_negative_rate"]) == {"successes", "trials", "value", "low", "high"}
    assert summary["flaky_subjects"] == [{"role": "adversarial", "subject": "adv_slow"},
                                         {"role": "reference", "subject": "ref_b"}]  # fmt: skip
    assert summary["mutation_score"]["value"] == 0.75
    assert summary["surviving_mutants"] == ["m3"]
    assert summary["probe_passes"] == ["always_eq"]
    assert summary["runtime"]["time_limit_s"] == TIME_LIMIT_S
    assert summary["reward_noise"]["fpr"] == rate(3, 16).as_dict()


def test_summarise_is_stable_whatever_the_order_of_outcomes():
    outcomes = version_outcomes() + sandbox_errors()
    expected = json.dumps(summarise(outcomes, time_limit_s=TIME_LIMIT_S))
    for seed in range(5):
        shuffled = outcomes[:]
        random.Random(seed).shuffle(shuffled)
        assert json.dumps(summarise(shuffled, time_limit_s=TIME_LIMIT_S)) == expected


def test_summarise_accepts_a_generator():
    summary = summarise(iter(version_outcomes()), time_limit_s=TIME_LIMIT_S)
    assert summary["counts"]["reference"] == 10 and summary["false_negative_rate"]["trials"] == 10
