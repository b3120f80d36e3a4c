"""The verification pipeline, run in-process against the real bwrap sandbox:
plan, execute, score, flag, decide; idempotent; sandbox failures kept apart."""

from __future__ import annotations

import pytest

from evaluation.models import Execution, MutantEquivalence, Verification, VerificationState
from evaluation.verification.config import VerifyConfig
from evaluation.verification.executions import execution_run
from evaluation.verification.inline import verification_run_inline
from evaluation.verification.planning import verification_plan
from tasks_app.models import State
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap
from .samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS

# Committed for real (the pipeline runs executions on other threads); serialized rollback
# puts the seeded rows (roles, content types) back for the tests after.
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

SMALL = VerifyConfig(repeats=2, mutants=8, mutation_seed=0, probes=True, backend="bwrap")


def _submitted(owner, **overrides):
    task = make_task(owner=owner, **overrides)
    task_submit(actor=owner, task=task)
    task.refresh_from_db()
    return task


def _clamp_task(owner, *, hidden, slug="clamp", adversarial=NO_UPPER_BOUND):
    solutions = [{"role": "reference", "label": "ref", "code": CLAMP}]
    if adversarial:
        solutions.append({"role": "adversarial", "label": "no-upper-bound", "code": adversarial})
    return _submitted(
        owner,
        slug=slug,
        title="Clamp",
        entry_point="clamp",
        statement="Clamp x into [low, high].",
        starter_code="def clamp(x, low, high):\n    ...\n",
        visible_tests=["assert clamp(3, 0, 10) == 3"],
        hidden_tests=hidden,
        solutions=solutions,
        time_limit_s=2,
    )


def test_a_sound_task_is_verified_with_every_figure(curator):
    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS)
    verification = verification_run_inline(version=task.latest_version, config=SMALL)

    assert verification.state == VerificationState.DONE and verification.verdict == "verified"
    task.refresh_from_db()
    assert task.state == State.VERIFIED
    assert set(verification.executions.values_list("role", flat=True)) == {
        "reference",
        "adversarial",
        "mutant",
        "probe",
        "explore",  # the generated inputs' run: every mutant judged on them
    }
    assert verification.executions.filter(role="reference").count() == 2  # R runs each
    summary = verification.summary
    assert summary["false_negative_rate"]["value"] == 0.0
    assert summary["adversarial_pass_rate"]["value"] == 0.0
    assert summary["probe_passes"] == []
    assert summary["mutation_score"]["value"] >= 0.8
    assert 0.0 <= summary["reward_noise"]["low"] <= summary["reward_noise"]["value"] <= summary["reward_noise"]["high"]
    assert not verification.flags.filter(severity="error").exists()
    assert set(verification.executions.values_list("status", flat=True)) <= {
        "passed",
        "failed",
        "error",
        "timeout",
        "memory_exceeded",
        "output_exceeded",
    }
    assert all(e.worker and e.request_digest for e in verification.executions.all())


def test_weak_tests_and_a_passing_adversarial_are_flagged(curator):
    task = _clamp_task(curator, hidden=["assert clamp(3, 0, 10) == 3"], slug="weak-clamp")
    verification = verification_run_inline(version=task.latest_version, config=SMALL)

    codes = set(verification.flags.values_list("code", flat=True))
    assert {"WEAK_TESTS", "ADVERSARIAL_PASSES", "TOO_FEW_TESTS"} <= codes
    assert verification.verdict == "flagged"
    task.refresh_from_db()
    assert task.state == State.FLAGGED
    weak = verification.flags.get(code="WEAK_TESTS")
    assert "mutants" in weak.message and weak.details["surviving"] > 0


def test_a_hackable_suite_is_flagged_hackable(curator):
    task = _clamp_task(curator, hidden=["assert clamp(3, 0, 10) is not None"], slug="hackable", adversarial="")
    verification = verification_run_inline(version=task.latest_version, config=SMALL)
    flag = verification.flags.get(code="HACKABLE")
    assert flag.severity == "error" and flag.details["probes"]


def test_verifying_again_is_a_cache_hit_and_a_redelivered_execution_runs_nothing(curator):
    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="idempotent")
    first = verification_run_inline(version=task.latest_version, config=SMALL)
    rows = Execution.objects.count()

    again, todo = verification_plan(version=task.latest_version, config=SMALL)
    assert again.pk == first.pk and todo == [] and Execution.objects.count() == rows
    done = first.executions.first()
    assert execution_run(execution_id=done.pk).attempts == done.attempts  # claimed by nobody: nothing ran
    other = VerifyConfig(repeats=3, mutants=8, backend="bwrap")
    assert verification_plan(version=task.latest_version, config=other)[0].pk != first.pk


def test_an_equivalent_mutant_leaves_the_score(curator):
    task = _clamp_task(curator, hidden=["assert clamp(3, 0, 10) == 3"], slug="equivalence")
    verification = verification_run_inline(version=task.latest_version, config=SMALL)
    score = verification.summary["mutation_score"]
    survivor = verification.summary["surviving_mutants"][0]
    MutantEquivalence.objects.create(task=task, mutant_digest=survivor, marked_by=curator, note="same behaviour")
    again = verification_run_inline(version=task.latest_version, config=SMALL, force=True)
    assert again.summary["mutation_score"]["trials"] == score["trials"] - 1
    assert survivor not in again.summary["surviving_mutants"]


def test_an_unavailable_sandbox_is_an_infrastructure_error_never_a_flag(curator, monkeypatch):
    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="infra")
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")  # every sandbox fails to start
    from evaluation.sandbox import engine

    engine.close_pools()
    broken = verification_run_inline(version=task.latest_version, config=SMALL)
    assert broken.state == VerificationState.INFRASTRUCTURE_ERROR
    assert not broken.flags.exists() and broken.verdict == ""
    assert set(broken.executions.values_list("status", flat=True)) == {"sandbox_error"}
    task.refresh_from_db()
    assert task.state == State.SUBMITTED  # no verdict on the task from a broken sandbox

    monkeypatch.delenv("SANDBOX_PYTHON")
    engine.close_pools()
    resumed = verification_run_inline(version=task.latest_version, config=SMALL)  # the retry resumes it
    assert resumed.pk == broken.pk and resumed.state == VerificationState.DONE
    assert Verification.objects.count() == 1
    task.refresh_from_db()
    assert task.state == State.VERIFIED


def test_a_verification_stuck_past_its_deadline_is_reaped_and_resumed(curator):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.verification.reaper import verifications_reap

    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="stuck")
    verification, todo = verification_plan(version=task.latest_version, config=SMALL)
    lost = Execution.objects.get(pk=todo[0])
    Execution.objects.filter(pk=lost.pk).update(status="running", worker="dead@host", started_at=timezone.now())
    Verification.objects.filter(pk=verification.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    resumed = dict(verifications_reap())
    assert sorted(resumed[verification.pk]) == sorted(todo)  # the dead worker's claim included
    verification.refresh_from_db()
    assert verification.deadline_at > timezone.now()
    assert verifications_reap() == []  # not stuck any more
    # The dead worker's claim is taken over once it is stale; everything then finishes.
    stale = timezone.now() - timedelta(hours=1)
    Execution.objects.filter(pk=lost.pk).update(started_at=stale)
    done = verification_run_inline(version=task.latest_version, config=SMALL)
    assert done.state == VerificationState.DONE
    assert Execution.objects.get(pk=lost.pk).attempts == 1 and Execution.objects.get(pk=lost.pk).worker != "dead@host"


def test_a_test_that_trusts_a_helper_the_solver_can_rewrite_is_hackable(curator):
    """HumanEval/32's shape: the check measures the answer through `poly`, which the
    starter code gives and the solver may rewrite."""
    starter = "def poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n\n\ndef find_zero(xs):\n    ...\n"
    reference = starter.replace(
        "def find_zero(xs):\n    ...\n",
        "def find_zero(xs):\n    low, high = -100.0, 100.0\n    for _ in range(200):\n"
        "        mid = (low + high) / 2\n        if poly(xs, low) * poly(xs, mid) <= 0:\n            high = mid\n"
        "        else:\n            low = mid\n    return low\n",
    )
    check = "def check(candidate):\n    assert abs(poly([-6, 11, -6, 1], candidate([-6, 11, -6, 1]))) < 1e-6\n"
    task = _submitted(curator, slug="find-zero", title="Find a zero", entry_point="find_zero",
                      statement="Return a zero of the polynomial xs.", starter_code=starter,
                      suite_kind="check_function", visible_tests=[], hidden_tests=[check] * 3,
                      solutions=[{"role": "reference", "label": "ref", "code": reference}], time_limit_s=2)  # fmt: skip
    verification = verification_run_inline(version=task.latest_version, config=SMALL)
    assert verification.executions.get(role="probe", subject="rewrite_helpers_to_zero").status == "passed"
    assert "rewrite_helpers_to_zero" in verification.flags.get(code="HACKABLE").details["probes"]


def test_two_tasks_with_the_same_content_each_get_their_own_evidence(curator):
    first = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="twin-a")
    second = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="twin-b")
    assert first.latest_version.content_hash == second.latest_version.content_hash
    a = verification_run_inline(version=first.latest_version, config=SMALL)
    b = verification_run_inline(version=second.latest_version, config=SMALL)
    assert a.total == b.total > 0 and b.executions.count() == b.total
    assert b.summary["mutation_score"]["trials"] > 0


def test_an_execution_is_recorded_and_counted_once_when_two_workers_finish_it(curator):
    """A stale claim taken over means two workers may finish one execution: the first
    result is recorded and counted, the second writes nothing. What the hot path writes
    as plain SQL reads back through the ORM as the ORM would have stored it."""
    from django.utils import timezone

    from evaluation.verification import execution_rows

    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS, slug="twice")
    verification, todo = verification_plan(version=task.latest_version, config=SMALL)
    first = execution_run(execution_id=todo[0])
    stored = Execution.objects.get(pk=todo[0])
    assert stored.status == first.status == "passed" and stored.result["status"] == "passed"
    assert stored.finished_at is not None and stored.finished_at.tzinfo is not None
    assert abs((stored.started_at - first.started_at).total_seconds()) < 1e-3 and stored.attempts == 1
    verification.refresh_from_db()
    assert verification.done == 1

    late = {"status": "failed", "result": {"status": "failed"}, "wall_s": 9.0, "finished_at": timezone.now()}
    assert execution_rows.execution_record(todo[0], late) is False  # the row is no longer running
    assert Execution.objects.get(pk=todo[0]).status == "passed"
    assert execution_run(execution_id=todo[0]).attempts == 1  # nothing to claim: not run again
    verification.refresh_from_db()
    assert verification.done == 1

    # A worker killed between recording and counting leaves progress short; the reaper recounts.
    Verification.objects.filter(pk=verification.pk).update(done=0, deadline_at=timezone.now())
    from evaluation.verification.reaper import verifications_reap

    verifications_reap()
    verification.refresh_from_db()
    assert verification.done == 1
