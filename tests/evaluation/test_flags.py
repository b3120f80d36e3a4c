"""What a verification's figures raise, and what counts as a test."""

from __future__ import annotations

from types import SimpleNamespace

from evaluation.verification.flags import count_checks, flags_for


def version(kind: str, hidden: list, visible: list = ()) -> SimpleNamespace:
    return SimpleNamespace(suite_kind=kind, hidden_tests=list(hidden), visible_tests=list(visible))


def rate(successes: int, trials: int) -> dict:
    return {"successes": successes, "trials": trials, "value": successes / trials if trials else None}


def test_a_check_module_counts_its_assertions_and_a_pytest_module_its_tests():
    check = "def check(candidate):\n" + "".join(f"    assert candidate({i}) == {i * i}\n" for i in (1, 2, 3))
    assert count_checks(version("check_function", [check])) == 3
    pytest_module = "def test_a():\n    assert f()\n\ndef test_b():\n    pass\n\ndef helper():\n    pass\n"
    assert count_checks(version("pytest", [pytest_module])) == 2
    assert count_checks(version("assertions", ["assert f(1)", "assert f(2)"], ["assert f(0)"])) == 3
    assert count_checks(version("check_function", ["def check(c):\n    c()\n", "not python ("])) == 2


def test_each_flag_is_raised_by_its_figure_with_a_sentence():
    summary = {
        "false_negative_rate": rate(1, 10),
        "flake_rate": rate(1, 2),
        "adversarial_pass_rate": rate(2, 5),
        "probe_passes": ["always_equal_object"],
        "mutation_score": rate(5, 10),
        "surviving_mutants": ["a" * 64] * 5,
        "runtime": {"p95": 6.0, "time_limit_s": 10.0, "headroom": 10 / 6},
    }
    found = {f.code: f for f in flags_for(summary, version=version("assertions", ["assert f()"]))}
    assert set(found) == {"REFERENCE_FAILS", "FLAKY", "ADVERSARIAL_PASSES", "HACKABLE", "WEAK_TESTS",
                          "SLOW_REFERENCE", "TOO_FEW_TESTS"}  # fmt: skip
    assert {f.severity for c, f in found.items() if c not in ("SLOW_REFERENCE", "TOO_FEW_TESTS")} == {"error"}
    assert "6.00 s of a 10 s limit" in found["SLOW_REFERENCE"].message
    assert "5 of 10 mutants" in found["WEAK_TESTS"].message
    clean = {"false_negative_rate": rate(0, 10), "mutation_score": rate(10, 10), "runtime": {"headroom": 50.0}}
    assert flags_for(clean, version=version("assertions", ["assert f(1)", "assert f(2)", "assert f(3)"])) == []


def test_a_setup_that_raised_with_the_reference_is_flagged_broken_setup_with_its_traceback():
    traceback = 'Traceback (most recent call last):\n  File "<test setup>", line 2\n'
    traceback += "NameError: name 'Leaf' is not defined"
    summary = {"false_negative_rate": rate(2, 2),
               "broken_setup": {"runs": 2, "reference_runs": 2, "traceback": traceback}}  # fmt: skip
    found = {f.code: f for f in flags_for(summary, version=version("assertions", ["assert f()"] * 3))}
    flag = found["BROKEN_SETUP"]
    assert flag.severity == "error" and "NameError: name 'Leaf' is not defined" in flag.message
    assert flag.details["traceback"] == traceback
    assert "BROKEN_SETUP" not in {f.code for f in flags_for({"broken_setup": None}, version=version("assertions", []))}
