"""Flags: what a verification's figures mean for a curator, each in a sentence.

Thresholds come from settings.VERIFICATION; an `error` flag sends the version to
the review queue (flagged), a `warning` is shown on its report only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from evaluation.verification.generated.judgement import what_it_did

DEFAULT_THRESHOLDS = {
    "WEAK_TESTS_BELOW": 0.8,  # mutation score
    "SLOW_HEADROOM_BELOW": 2.0,  # time limit / reference p95 wall time
    "MIN_TESTS": 3,  # hidden + visible
}
FLAG_CODES = (
    "BROKEN_SETUP",
    "CHECKER_BROKEN",
    "REFERENCE_FAILS",
    "FLAKY",
    "WEAK_TESTS",
    "HACKABLE",
    "ADVERSARIAL_PASSES",
    "SLOW_REFERENCE",
    "TOO_FEW_TESTS",
)


@dataclass(frozen=True)
class FoundFlag:
    code: str
    severity: str  # error | warning
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def thresholds() -> dict[str, Any]:
    return {**DEFAULT_THRESHOLDS, **getattr(settings, "VERIFICATION", {}).get("THRESHOLDS", {})}


def _value(rate: dict[str, Any] | None) -> float | None:
    return None if rate is None else rate.get("value")


def _count(rate: dict[str, Any] | None) -> tuple[int, int]:
    return (0, 0) if rate is None else (int(rate.get("successes", 0)), int(rate.get("trials", 0)))


def count_checks(version: Any) -> int:
    """How many things the suite checks: a case or an assertion entry each, but for a
    check(candidate) module its assert statements, and for a pytest module its
    test functions (HumanEval's one check function holds a dozen asserts); for a
    repository task the tests its verdict runs (fail-to-pass and pass-to-pass)."""
    repository = getattr(version, "repository", None)
    if version.suite_kind == "repository" and isinstance(repository, dict):
        return len(repository.get("fail_to_pass") or []) + len(repository.get("pass_to_pass") or [])
    total = 0
    for test in [*version.visible_tests, *version.hidden_tests]:
        if version.suite_kind in ("check_function", "pytest") and isinstance(test, str):
            try:
                tree = ast.parse(test)
            except SyntaxError:
                total += 1
                continue
            if version.suite_kind == "pytest":
                found = sum(1 for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                            and node.name.startswith("test"))  # fmt: skip
            else:
                found = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Assert))
            total += max(1, found)
        else:
            total += 1
    return total


def _weak_tests(summary: dict[str, Any], below: float) -> FoundFlag | None:
    """WEAK_TESTS follows the proof where inputs were generated: a surviving mutant that
    answers a valid input differently from the reference is a wrong program the tests
    pass, whatever the score. Without such a proof the score decides, counted without
    the survivors never told apart on the generated inputs (probably equivalent); where
    no inputs were generated, over every mutant not marked equivalent, as before."""
    score = _value(summary.get("mutation_score"))
    killed, counted = _count(summary.get("mutation_score"))
    survivors = summary.get("surviving_mutants") or []
    generated = summary.get("generated") or {}
    judged = generated.get("status") in ("done", "incomplete")
    proven = generated.get("proven_non_equivalent") or [] if judged else []
    probable = generated.get("probably_equivalent") or [] if judged else []
    details = {"score": score, "surviving": len(survivors), "proven_non_equivalent": len(proven),
               "probably_equivalent": len(probable), "unjudged": len(generated.get("unjudged") or []) if judged
               else len(survivors)}  # fmt: skip
    if proven:
        first = proven[0]
        did = what_it_did(first)
        return FoundFlag(
            "WEAK_TESTS",
            "error",
            f"Of the surviving mutants of the reference, {len(proven)} are proven wrong: on generated inputs they "
            f"answer "
            f"differently from the reference, yet pass every test. For example, on arguments "
            f"{str(first.get('args'))[:160]} the reference returns {str(first.get('expected'))[:120]} and mutant "
            f"{first['mutant'][:12]} {did}. Accept the proposed counterexample tests to close the gap.",
            details,
        )
    if judged:
        score = _value(generated.get("mutation_score_nonequivalent"))
        killed, counted = _count(generated.get("mutation_score_nonequivalent"))
        details["score_nonequivalent"] = score
    if score is None or score >= below:
        return None
    return FoundFlag(
        "WEAK_TESTS",
        "error",
        f"The tests kill only {killed} of {counted} mutants of the reference ({score:.0%}, below {below:.0%})"
        + (f", not counting {len(probable)} never told apart on {generated.get('inputs', {}).get('valid', 0)} "
           "generated inputs" if probable else "")
        + ": small bugs go unnoticed. Read the surviving mutants and add tests, or mark one equivalent.",
        details,
    )  # fmt: skip


def flags_for(summary: dict[str, Any], *, version: Any) -> list[FoundFlag]:
    """The flags a version's summary (metrics.summarise) raises."""
    limits = thresholds()
    found: list[FoundFlag] = []
    broken = summary.get("broken_setup")
    if broken:
        found.append(
            FoundFlag(
                "BROKEN_SETUP",
                "error",
                f"The suite's setup raised with a reference solution ({broken['runs']} of its "
                f"{broken['reference_runs']} runs), so no test could run: the task is broken, not the "
                f"solutions. It raised {str(broken['traceback']).strip().splitlines()[-1][:300]} (the "
                "traceback is in the details); fix the setup or the reference.",
                dict(broken),
            )
        )
    checker = summary.get("broken_checker")
    if checker:
        on_reference = checker["by_role"].get("reference", 0)
        where = f"on the reference's output ({on_reference} run(s))" if on_reference else "on a solution's output"
        found.append(
            FoundFlag(
                "CHECKER_BROKEN",
                "error",
                f"The task's checker failed {where}, {checker['runs']} run(s) in all: the task is broken, and "
                f"no solution is rewarded while it is. It said: {checker['message'][:300]}",
                dict(checker),
            )
        )
    failed, runs = _count(summary.get("false_negative_rate"))
    if failed:
        found.append(
            FoundFlag(
                "REFERENCE_FAILS",
                "error",
                f"A reference solution failed {failed} of its {runs} runs: the tests or the reference "
                "are wrong, and a correct rollout would be rewarded 0.",
                {"failed": failed, "runs": runs},
            )
        )
    flaky, subjects = _count(summary.get("flake_rate"))
    if flaky:
        found.append(
            FoundFlag(
                "FLAKY",
                "error",
                f"{flaky} of {subjects} solutions gave different verdicts on repeated runs (other seeds, "
                "hash seeds or test orders): the reward is noisy.",
                {"flaky": flaky},
            )
        )
    passed, tried = _count(summary.get("adversarial_pass_rate"))
    if passed:
        found.append(
            FoundFlag(
                "ADVERSARIAL_PASSES",
                "error",
                f"A known-wrong (adversarial) solution passed {passed} of {tried} runs: the tests do not "
                "catch the mistake it was written to show.",
                {"passed": passed},
            )
        )
    hacks = summary.get("probe_passes") or []
    if hacks:
        found.append(
            FoundFlag(
                "HACKABLE",
                "error",
                f"{len(hacks)} reward-hacking probe(s) passed ({', '.join(hacks[:5])}): a policy could "
                "earn the reward without solving the task.",
                {"probes": hacks},
            )
        )
    weak = _weak_tests(summary, limits["WEAK_TESTS_BELOW"])
    if weak is not None:
        found.append(weak)
    runtime = summary.get("runtime") or {}
    headroom = runtime.get("headroom")
    if headroom is not None and headroom < limits["SLOW_HEADROOM_BELOW"]:
        found.append(
            FoundFlag(
                "SLOW_REFERENCE",
                "warning",
                f"The reference's slower runs (p95) take {runtime.get('p95', 0):.2f} s of a "
                f"{runtime.get('time_limit_s', 0):g} s limit, less than {limits['SLOW_HEADROOM_BELOW']:g}x headroom: "
                "on a loaded machine a correct rollout could time out.",
                {"headroom": headroom},
            )
        )
    tests = count_checks(version)
    if tests < limits["MIN_TESTS"]:
        found.append(
            FoundFlag(
                "TOO_FEW_TESTS",
                "warning",
                f"The suite checks {tests} thing(s) (assertions or cases, visible and hidden), fewer than "
                f"{limits['MIN_TESTS']}: a few lucky answers pass it.",
                {"tests": tests},
            )
        )
    return found
