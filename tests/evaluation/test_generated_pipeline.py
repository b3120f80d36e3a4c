"""Generated inputs through the whole pipeline, in real sandboxes: survivors proven or
probably equivalent, WEAK_TESTS following the proof, proposed tests accepted as a new
version that kills the survivors, and hidden tests for an all-visible suite that make
hard-coding the visible answers fail."""

from __future__ import annotations

import pytest

from evaluation.models import Flag, ProposedTest
from evaluation.verification.config import VerifyConfig
from evaluation.verification.generated.proposals import proposed_tests_accept
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

CONFIG = VerifyConfig(repeats=2, mutants=12, probes=False, backend="bwrap", inputs=150)

# The largest of a list, tested only where the largest comes last: `xs[-1]` survives
# the tests, and generated lists in other orders tell it apart.
LARGEST = (
    "def largest(xs):\n    best = xs[0]\n    for x in xs:\n        if x > best:\n            best = x\n"
    "    return best\n"
)
# Clamped to 0..10, tested only inside the range: mutants of either bound survive the
# tests, and generated inputs at and past the edges tell them apart.
CLAMP = "def clamp(x):\n    return min(max(x, 0), 10)\n"
CLAMP_TESTS = ["assert clamp(5) == 5", "assert clamp(3) == 3"]
WEAK_TESTS = ["assert largest([1, 2, 3]) == 3", "assert largest([5]) == 5"]


def submitted(curator, slug: str, **content) -> Task:
    task = make_task(owner=curator, slug=slug, **content)
    task_submit(actor=curator, task=task)
    task.refresh_from_db()
    return task


def test_a_survivor_the_tests_miss_is_proven_with_a_small_counterexample_and_its_test_kills_it(curator):
    task = submitted(
        curator, "clamp", entry_point="clamp", starter_code="def clamp(x):\n    ...\n",
        visible_tests=CLAMP_TESTS[:1], hidden_tests=CLAMP_TESTS,
        solutions=[{"role": "reference", "label": "ref", "code": CLAMP}],
    )  # fmt: skip
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)
    generated = verification.summary["generated"]
    assert generated["status"] == "done", generated
    assert generated["inputs"]["valid"] > 50 and generated["inputs"]["captured"] >= 2
    proven = generated["proven_non_equivalent"]
    assert proven, verification.summary["surviving_mutants"]
    # Shrunk: a counterexample a person reads at a glance.
    assert all(len(p["args"]) <= 30 for p in proven), proven
    weak = Flag.objects.get(verification=verification, code="WEAK_TESTS")
    assert "proven wrong" in weak.message
    proposals = list(ProposedTest.objects.filter(verification=verification, reason="counterexample"))
    assert {p.mutant_digest for p in proposals} == {p["mutant"] for p in proven}

    result = proposed_tests_accept(actor=curator, proposals=proposals, submit=False)
    (version,) = result.versions
    assert version.number == 2 and len(version.hidden_tests) == len(CLAMP_TESTS) + len(proposals)
    assert [g["reason"] for g in version.generated_tests] == ["counterexample"] * len(proposals)
    assert all(g["from_version"] == task.latest_version.content_hash for g in version.generated_tests)
    assert set(ProposedTest.objects.filter(pk__in=[p.pk for p in proposals]).values_list("state", flat=True)) == {
        "accepted"
    }
    task_submit(actor=curator, task=Task.objects.get(pk=task.pk))
    again = verification_run_inline(version=version, config=CONFIG)
    assert not again.summary["generated"]["proven_non_equivalent"]
    assert again.summary["false_negative_rate"]["successes"] == 0  # the reference passes its new tests
    assert not Flag.objects.filter(verification=again, code="WEAK_TESTS").exists()
    # Accepting the same proposals twice writes nothing.
    assert proposed_tests_accept(actor=curator, proposals=proposals, submit=False).versions == []


def test_an_all_visible_suite_gets_hidden_tests_that_hard_coding_the_examples_fails(curator):
    shown = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 7) == 7"]
    config = VerifyConfig(repeats=1, mutants=6, probes=True, backend="bwrap", inputs=100)
    reference = [{"role": "reference", "label": "ref", "code": "def add(a, b):\n    return a + b\n"}]
    task = submitted(curator, "add-shown", visible_tests=shown, hidden_tests=shown, solutions=reference)
    before = verification_run_inline(version=task.latest_version, config=config)
    hard_coded = before.executions.get(role="probe", subject="hard_code_visible")
    assert hard_coded.status == "passed"  # every test is shown: the table of answers passes
    proposals = list(ProposedTest.objects.filter(verification=before, reason="hidden_for_visible"))
    assert 1 <= len(proposals) <= config.proposals
    assert not any(p.args in ("(1, 2)", "(2, 2)", "(0, 7)") for p in proposals)
    (version,) = proposed_tests_accept(actor=curator, proposals=proposals, submit=True).versions
    assert Task.objects.get(pk=task.pk).state == "submitted"
    after = verification_run_inline(version=version, config=config)
    assert after.executions.get(role="probe", subject="hard_code_visible").status != "passed"
    assert not Flag.objects.filter(verification=after, code__in=["HACKABLE", "REFERENCE_FAILS"]).exists()


def test_a_precondition_keeps_generated_inputs_in_the_task_s_domain(curator):
    # The reference is right only for non-empty lists of non-negative numbers; the
    # precondition says so, and no input outside it is used or proposed.
    task = submitted(
        curator, "largest-pre", entry_point="largest", starter_code="def largest(xs):\n    ...\n",
        visible_tests=WEAK_TESTS[:1], hidden_tests=WEAK_TESTS,
        solutions=[{"role": "reference", "label": "ref", "code": LARGEST}],
        precondition="def precondition(xs):\n    return len(xs) >= 2 and all(x >= 0 for x in xs)\n",
    )  # fmt: skip
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)
    generated = verification.summary["generated"]
    assert generated["inputs"]["invalid_reasons"].get("precondition", 0) > 0
    for proposal in ProposedTest.objects.filter(verification=verification):
        (xs,) = eval(proposal.args)  # noqa: S307 - a literal the test itself checks
        assert len(xs) >= 2 and all(x >= 0 for x in xs)
