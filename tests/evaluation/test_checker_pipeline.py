"""A stdio task with a checker through verification and the reward API: a reference
whose answers differ from the jury's is verified, a wrong one fails, and a checker
that fails makes the task broken (CHECKER_BROKEN), never an infrastructure error to
retry and never a reward of 0 for the solution."""

from __future__ import annotations

import pytest

from evaluation.sandbox import engine
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.factories import make_task
from trainer_bridge.services import reward_runs, rewards

from .checker_samples import PAIR_CASES, PAIR_PYTHON, PAIR_SOLUTION_MALFORMED, PAIR_SOLUTION_OTHER, PAIR_SOLUTION_WRONG
from .conftest import needs_bwrap

CONFIG = VerifyConfig(repeats=2, mutants=6, probes=True, backend="bwrap", inputs=0)


@pytest.fixture(autouse=True)
def fresh(private_compile_cache):
    """A compile cache of the test's own (conftest.py) and no warm pool left from another test."""
    engine.close_pools()
    yield
    engine.close_pools()


def checker_task(curator, *, slug: str, checker: str = PAIR_PYTHON):
    return make_task(
        owner=curator, slug=slug, suite_kind="stdio", entry_point="", starter_code="", test_setup="",
        visible_tests=PAIR_CASES[:1], hidden_tests=PAIR_CASES[1:],
        solutions=[{"role": "reference", "label": "first pair", "code": PAIR_SOLUTION_OTHER},
                   {"role": "adversarial", "label": "always 1 2", "code": PAIR_SOLUTION_WRONG}],
        comparator={"mode": "checker", "language": "python", "source": checker},
    )  # fmt: skip


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_task_with_a_checker_verifies_and_a_failing_checker_breaks_the_task(curator):
    task = checker_task(curator, slug="pair-sum")
    task_submit(actor=curator, task=task)
    verification = verification_run_inline(version=Task.objects.get(pk=task.pk).latest_version, config=CONFIG)
    runs = {(e.role, e.status) for e in verification.executions.all()}
    assert ("reference", "passed") in runs and ("adversarial", "failed") in runs, runs
    assert not verification.executions.filter(status__in=("sandbox_error", "checker_error")).exists(), runs
    codes = set(verification.flags.values_list("code", flat=True))
    assert not codes & {"CHECKER_BROKEN", "REFERENCE_FAILS", "ADVERSARIAL_PASSES"}, codes
    assert verification.state == "done" and verification.summary["excluded_checker_errors"] == 0

    broken = checker_task(curator, slug="pair-sum-broken", checker="import sys\nsys.exit(3)\n")
    task_submit(actor=curator, task=broken)
    verification = verification_run_inline(version=Task.objects.get(pk=broken.pk).latest_version, config=CONFIG)
    assert verification.state == "done", verification.state  # the task's fault: decided, not retried
    flag = verification.flags.get(code="CHECKER_BROKEN")
    assert flag.severity == "error" and "on the reference's output" in flag.message, flag.message
    assert verification.verdict == "flagged"
    assert verification.executions.filter(role="reference", status="checker_error").exists()
    # Left out of every metric: the reference's runs are no false negatives.
    assert verification.summary["false_negative_rate"]["trials"] == 0
    assert verification.summary["excluded_checker_errors"] >= 2


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_rewards_follow_the_checker_and_a_failing_checker_pays_nothing(curator):
    good = checker_task(curator, slug="pair-sum-rewards")
    bad = checker_task(curator, slug="pair-sum-rewards-broken", checker="raise ValueError('bug')\n")
    completions = [
        {"id": "other", "version_hash": good.latest_version.content_hash,
         "completion": f"```python\n{PAIR_SOLUTION_OTHER}```"},
        {"id": "wrong", "version_hash": good.latest_version.content_hash,
         "completion": f"```python\n{PAIR_SOLUTION_WRONG}```"},
        {"id": "malformed", "version_hash": good.latest_version.content_hash,
         "completion": f"```python\n{PAIR_SOLUTION_MALFORMED}```"},
        {"id": "judge-broken", "version_hash": bad.latest_version.content_hash,
         "completion": f"```python\n{PAIR_SOLUTION_OTHER}```"},
    ]  # fmt: skip
    batch, _ = rewards.rewards_submit(user=curator, request=rewards.parse_batch({"completions": completions}))
    for chunk in rewards.chunks_of(batch):
        reward_runs.reward_items_run(item_ids=chunk)
    by_id = {r["id"]: r for r in rewards.batch_body(batch, reveal_hidden=False)["results"]}
    assert (by_id["other"]["status"], by_id["other"]["reward"]) == ("passed", 1.0)
    assert (by_id["wrong"]["status"], by_id["wrong"]["reward"]) == ("failed", 0.0)
    assert (by_id["malformed"]["status"], by_id["malformed"]["reward"]) == ("presentation_error", 0.0)
    assert (by_id["judge-broken"]["status"], by_id["judge-broken"]["reward"]) == ("checker_error", None)
    assert "crashed" in by_id["judge-broken"]["message"]
    assert by_id["judge-broken"]["retries"] == 0  # the same checker fails the same way: not sent again
    # A hidden test's checker message could hold the answer: a policy never reads it.
    hidden = [f for f in by_id["wrong"]["tests"]["failures"] if f["name"].startswith("hidden")]
    assert hidden and all(f["message"] == "(hidden test)" for f in hidden)
