"""A reward chunk's items stand alone: one item's failure is that item's
`sandbox_error` and nobody else's, and a `sandbox_error` is run again on the
server (REWARD_SANDBOX_RETRIES times at most) before it is answered with no reward.

No completion makes the engine raise, and none makes a healthy sandbox fail, on
purpose: every such path is already a verdict. So these tests put the fault in
by hand for one marked completion, around the real engine that runs all the
others. The drill in tests/faults/test_reward_fault_drill.py does it for real,
killing sandboxes from outside under a real worker.
"""

from __future__ import annotations

from typing import Any

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.types import RunResult, Status
from tests.evaluation.conftest import needs_bwrap
from tests.factories import make_task
from trainer_bridge.models import RewardItem
from trainer_bridge.services import reward_runs, rewards

from .test_rewards import CORRECT, WRONG

MARK = "# fault here\n"
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]


@pytest.fixture(autouse=True)
def _fresh_pools():
    engine.close_pools()
    yield
    engine.close_pools()


def _submit(curator: Any, texts: dict[str, str]) -> Any:
    task = make_task(owner=curator)
    body = [{"version_hash": task.latest_version.content_hash, "completion": text, "id": name}
            for name, text in texts.items()]  # fmt: skip
    batch, _ = rewards.rewards_submit(user=curator, request=rewards.parse_batch({"completions": body}))
    return batch


def _run_all(batch: Any) -> dict[str, dict[str, Any]]:
    for chunk in rewards.chunks_of(batch):
        reward_runs.reward_items_run(item_ids=chunk)
    return {r["id"]: r for r in rewards.batch_body(batch, reveal_hidden=False)["results"]}


def _faulty_engine(monkeypatch: pytest.MonkeyPatch, fault: Any) -> list[int]:
    """engine.run, with `fault(calls)` standing in for the run of the marked completion."""
    real, calls = engine.run, [0]

    def run(request: Any, **kw: Any) -> Any:
        if MARK in request.solution:
            calls[0] += 1
            return fault(calls[0], request, real, **kw)
        return real(request, **kw)

    monkeypatch.setattr(engine, "run", run)
    return calls


def test_one_items_exception_is_that_items_sandbox_error_alone(curator, monkeypatch, settings):
    settings.REWARD = {**settings.REWARD, "SANDBOX_RETRIES": 1}

    def crash(calls: int, request: Any, real: Any, **kw: Any) -> Any:
        raise RuntimeError("a bug in the platform")

    calls = _faulty_engine(monkeypatch, crash)
    batch = _submit(
        curator, {"ok": CORRECT, "wrong": WRONG, "crash": CORRECT.replace("```python\n", "```python\n" + MARK)}
    )
    results = _run_all(batch)
    assert (results["ok"]["status"], results["ok"]["reward"]) == ("passed", 1.0)
    assert (results["wrong"]["status"], results["wrong"]["reward"]) == ("failed", 0.0)
    assert (results["crash"]["status"], results["crash"]["reward"]) == ("sandbox_error", None)
    assert "RuntimeError: a bug in the platform" in results["crash"]["message"]
    assert results["crash"]["retries"] == 1 and calls[0] == 2  # run, then the one retry allowed
    assert not RewardItem.objects.filter(batch=batch, finished_at__isnull=True).exists()  # none left `running`


def test_a_sandbox_error_is_retried_on_the_server_and_the_retry_counted(curator, monkeypatch):
    def broken_twice(calls: int, request: Any, real: Any, **kw: Any) -> Any:
        if calls <= 2:
            return RunResult(status=Status.SANDBOX_ERROR, message="the sandbox failed, not the solution")
        return real(request, **kw)

    calls = _faulty_engine(monkeypatch, broken_twice)
    batch = _submit(curator, {"ok": CORRECT, "flaky": CORRECT.replace("```python\n", "```python\n" + MARK)})
    results = _run_all(batch)
    assert (results["flaky"]["status"], results["flaky"]["reward"]) == ("passed", 1.0)
    assert results["flaky"]["retries"] == 2 and calls[0] == 3
    assert results["ok"]["retries"] == 0


def test_retries_are_bounded_and_then_the_reward_is_null(curator, monkeypatch, settings):
    settings.REWARD = {**settings.REWARD, "SANDBOX_RETRIES": 2}

    def always_broken(calls: int, request: Any, real: Any, **kw: Any) -> Any:
        return RunResult(status=Status.SANDBOX_ERROR, message="the sandbox failed, not the solution")

    calls = _faulty_engine(monkeypatch, always_broken)
    batch = _submit(curator, {"broken": WRONG.replace("```python\n", "```python\n" + MARK)})
    results = _run_all(batch)
    assert (results["broken"]["status"], results["broken"]["reward"]) == ("sandbox_error", None)
    assert results["broken"]["retries"] == 2 and calls[0] == 3
