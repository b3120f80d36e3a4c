"""Survivors judged on generated inputs, WEAK_TESTS following the proof, and generated
inputs written as hidden tests (pure parts: no sandbox, no database)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evaluation.verification.flags import flags_for
from evaluation.verification.generated import all_tests_visible, applies
from evaluation.verification.generated.judgement import MIN_TRIED, survivors_judged
from evaluation.verification.generated.tests_text import NotATest, hidden_test

A, B, C, D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def rate(successes: int, trials: int) -> dict:
    return {"successes": successes, "trials": trials, "value": successes / trials if trials else None}


def data(**mutants: dict) -> dict:
    return {"generator": "explore-1", "seed": 7, "captured": 4, "generated": 200, "valid": 150, "invalid": 50,
            "invalid_reasons": {"raised": 40, "precondition": 10}, "complete": True, "mutants": mutants}  # fmt: skip


DIFFERS = {"outcome": "differs", "tried": 3,
           "counterexample": {"args": "([2, 1],)", "kwargs": "{}", "expected": "2", "got": "1", "raised": None,
                              "timed_out": False, "shrink_steps": 5, "literal": True}}  # fmt: skip


def test_survivors_are_proven_probable_or_unjudged_by_what_the_run_saw():
    judged = survivors_judged(
        status="passed",
        data=data(**{A: DIFFERS, B: {"outcome": "same", "tried": 150}, C: {"outcome": "same", "tried": MIN_TRIED - 1}}),
        survivors=[A, B, C, D],
        mutation_score=rate(6, 10),
    )
    assert judged["status"] == "done"
    assert [p["mutant"] for p in judged["proven_non_equivalent"]] == [A]
    assert judged["proven_non_equivalent"][0]["args"] == "([2, 1],)"
    assert judged["probably_equivalent"] == [{"mutant": B, "tried": 150}]
    assert judged["unjudged"] == [C, D]  # too few inputs to say; never reached
    assert judged["equivalence_share"] == 0.25
    # Both ways: 6 of 10 over all mutants; 6 of 9 without the probably equivalent one.
    assert judged["mutation_score_nonequivalent"]["successes"] == 6
    assert judged["mutation_score_nonequivalent"]["trials"] == 9
    assert judged["inputs"]["invalid_share"] == 0.25


def test_a_failed_or_missing_run_judges_nothing():
    failed = survivors_judged(status="timeout", data=None, survivors=[A], mutation_score=rate(1, 2))
    assert failed["status"] == "failed" and failed["unjudged"] == [A] and not failed["proven_non_equivalent"]
    none = survivors_judged(status="", data=None, survivors=[A], mutation_score=rate(1, 2))
    assert none["status"] == "not_run"
    partial = survivors_judged(status="passed", data={**data(**{A: DIFFERS}), "complete": False}, survivors=[A, B],
                               mutation_score=rate(1, 3))  # fmt: skip
    assert partial["status"] == "incomplete" and partial["unjudged"] == [B]


def summary(score: dict, survivors: list[str], generated: dict | None) -> dict:
    return {"mutation_score": score, "surviving_mutants": survivors, "generated": generated,
            "false_negative_rate": rate(0, 5), "runtime": {"headroom": 50.0}}  # fmt: skip


def weak(found: list) -> object | None:
    return next((f for f in found if f.code == "WEAK_TESTS"), None)


VERSION = SimpleNamespace(suite_kind="assertions", hidden_tests=["assert f(1)"] * 3, visible_tests=[])


def test_weak_tests_is_raised_by_one_proven_survivor_whatever_the_score():
    generated = survivors_judged(status="passed", data=data(**{A: DIFFERS}), survivors=[A], mutation_score=rate(29, 30))
    flag = weak(flags_for(summary(rate(29, 30), [A], generated), version=VERSION))
    assert flag is not None and flag.severity == "error"
    assert "([2, 1],)" in flag.message and "returns 2" in flag.message and "returned 1" in flag.message
    assert flag.details["proven_non_equivalent"] == 1


def test_probably_equivalent_survivors_do_not_make_tests_weak_but_unjudged_ones_still_count():
    same = {"outcome": "same", "tried": 150}
    generated = survivors_judged(status="passed", data=data(**{A: same, B: same}), survivors=[A, B],
                                 mutation_score=rate(5, 7))  # fmt: skip
    assert weak(flags_for(summary(rate(5, 7), [A, B], generated), version=VERSION)) is None  # 5 of 5 counted
    # Without generated inputs the old rule holds: 5 of 7 is below 80%.
    assert weak(flags_for(summary(rate(5, 7), [A, B], None), version=VERSION)) is not None
    unjudged = survivors_judged(status="passed", data=data(), survivors=[A, B], mutation_score=rate(5, 7))
    assert weak(flags_for(summary(rate(5, 7), [A, B], unjudged), version=VERSION)) is not None


def test_a_check_module_test_compares_floats_with_a_tolerance_and_says_what_it_got():
    test = hidden_test(suite_kind="check_function", entry_point="f", args="([1.5, 2.0], 'x')", kwargs="{}",
                       expected="[0.1, 3]", note="generated")  # fmt: skip
    scope: dict = {}
    exec(compile(test, "<t>", "exec"), scope)  # noqa: S102 - our own generated text
    scope["check"](lambda xs, s: [0.1 + 1e-12, 3])
    with pytest.raises(AssertionError, match="returned"):
        scope["check"](lambda xs, s: [0.2, 3])
    exact = hidden_test(suite_kind="check_function", entry_point="f", args="('a\"b',)", kwargs="{'k': 1}",
                        expected="'x'", note="n")  # fmt: skip
    assert "candidate('a\"b', k=1)" in exact and "got == 'x'" in exact


def test_an_assertion_test_is_one_assert_statement():
    test = hidden_test(suite_kind="assertions", entry_point="g", args="(3,)", kwargs="{}", expected="(1, 2)", note="")
    assert test == "assert g(3) == (1, 2)"
    close = hidden_test(suite_kind="assertions", entry_point="g", args="(3,)", kwargs="{}", expected="0.5", note="")
    assert close.startswith("assert abs(g(3) - 0.5) <=")


@pytest.mark.parametrize(
    ("args", "expected", "why"),
    [
        ("(__import__('os'),)", "1", "not a Python literal"),
        ("(1,)", "float('nan')", "not a Python literal"),
        ("(1,)", "[1.5]", "floats inside a container"),
        ("[1]", "1", "not a tuple"),
    ],
)
def test_what_cannot_be_written_as_a_test_is_refused(args: str, expected: str, why: str):
    with pytest.raises(NotATest, match=why):
        hidden_test(suite_kind="assertions", entry_point="g", args=args, kwargs="{}", expected=expected, note="")


def test_generation_applies_to_call_suites_and_all_visible_means_nothing_hidden_is_unseen():
    mbpp = SimpleNamespace(suite_kind="assertions", entry_point="f", visible_tests=["assert f(1) == 1"],
                           hidden_tests=["assert f(1) == 1"])  # fmt: skip
    assert applies(mbpp) and all_tests_visible(mbpp)
    humaneval = SimpleNamespace(suite_kind="check_function", entry_point="f", visible_tests=[],
                                hidden_tests=["def check(c):\n    assert c(1)\n"])  # fmt: skip
    assert applies(humaneval) and not all_tests_visible(humaneval)
    assert not applies(SimpleNamespace(suite_kind="stdio", entry_point=""))
