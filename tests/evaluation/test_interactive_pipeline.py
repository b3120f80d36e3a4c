"""An interactive task through verification and the reward API: the reference's
dialogue is verified, a wrong one and the probes fail on the interactor's word, and
an interactor that fails while the solution still talks breaks the task
(CHECKER_BROKEN), never a reward of 0 for the solution."""

from __future__ import annotations

import pytest

from evaluation.sandbox import engine
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.factories import make_task
from trainer_bridge.services import reward_runs, rewards

from .conftest import BACKENDS, needs_bwrap
from .interactor_samples import BINARY_SEARCH_PYTHON, COUNT_UP_PYTHON, GUESS_PYTHON

CONFIG = VerifyConfig(repeats=2, mutants=4, probes=True, backend="bwrap", inputs=0)
CASES = [{"input": f"{n} {secret}\n", "output": f"{secret}\n"} for n, secret in
         ((10, 3), (1000000, 999999), (1000000, 1), (1, 1), (64, 33), (999983, 314159))]  # fmt: skip


@pytest.fixture(autouse=True)
def fresh(private_compile_cache):
    """A compile cache of the test's own (conftest.py) and no warm pool left from another test."""
    engine.close_pools()
    yield
    engine.close_pools()


def interactive_task(curator, *, slug: str, interactor: str = GUESS_PYTHON):
    return make_task(
        owner=curator, slug=slug, suite_kind="stdio", entry_point="", starter_code="", test_setup="",
        visible_tests=CASES[:1], hidden_tests=CASES[1:],
        solutions=[{"role": "reference", "label": "binary search", "code": BINARY_SEARCH_PYTHON},
                   {"role": "adversarial", "label": "count up", "code": COUNT_UP_PYTHON}],
        comparator={"mode": "interactor", "language": "python", "source": interactor},
    )  # fmt: skip


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_an_interactive_task_verifies_and_a_failing_interactor_breaks_it(curator):
    task = interactive_task(curator, slug="guess")
    task_submit(actor=curator, task=task)
    verification = verification_run_inline(version=Task.objects.get(pk=task.pk).latest_version, config=CONFIG)
    runs = {(e.role, e.status) for e in verification.executions.all()}
    assert ("reference", "passed") in runs and ("adversarial", "failed") in runs, runs
    assert not verification.executions.filter(status__in=("sandbox_error", "checker_error")).exists(), runs
    codes = set(verification.flags.values_list("code", flat=True))
    assert not codes & {"CHECKER_BROKEN", "REFERENCE_FAILS", "ADVERSARIAL_PASSES", "HACKABLE"}, codes
    assert verification.state == "done"
    assert verification.executions.filter(role="probe").exists()

    broken = interactive_task(curator, slug="guess-broken", interactor="import sys\nsys.exit(3)\n")
    task_submit(actor=curator, task=broken)
    verification = verification_run_inline(version=Task.objects.get(pk=broken.pk).latest_version, config=CONFIG)
    assert verification.state == "done", verification.state
    assert verification.flags.filter(code="CHECKER_BROKEN").exists()
    assert verification.executions.filter(role="reference", status="checker_error").exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("backend", BACKENDS)
def test_rewards_follow_the_interactor(curator, backend, monkeypatch):
    monkeypatch.setenv("SANDBOX_BACKEND", backend)  # the reward API's runs go to this backend's sandboxes
    good = interactive_task(curator, slug="guess-rewards")
    completions = [
        {"id": "right", "version_hash": good.latest_version.content_hash,
         "completion": f"```python\n{BINARY_SEARCH_PYTHON}```"},
        {"id": "wrong", "version_hash": good.latest_version.content_hash,
         "completion": f"```python\n{COUNT_UP_PYTHON}```"},
        {"id": "silent", "version_hash": good.latest_version.content_hash, "completion": "```python\npass\n```"},
    ]  # fmt: skip
    batch, _ = rewards.rewards_submit(user=curator, request=rewards.parse_batch({"completions": completions}))
    for chunk in rewards.chunks_of(batch):
        reward_runs.reward_items_run(item_ids=chunk)
    by_id = {r["id"]: r for r in rewards.batch_body(batch, reveal_hidden=False)["results"]}
    assert (by_id["right"]["status"], by_id["right"]["reward"]) == ("passed", 1.0)
    assert (by_id["wrong"]["status"], by_id["wrong"]["reward"]) == ("failed", 0.0)
    assert (by_id["silent"]["status"], by_id["silent"]["reward"]) == ("failed", 0.0)
    assert {item.result["backend"] for item in batch.items.all()} == {backend}
    hidden = [f for f in by_id["wrong"]["tests"]["failures"] if f["name"].startswith("hidden")]
    assert hidden and all(f["message"] == "(hidden test)" for f in hidden)
