"""A verify_version message lost before any row records the work, on real workers.

Submitting commits the task in `submitted`, then sends verify_version on commit. If
that send fails (the broker is down or unreachable) the message is lost before any
verification row exists. The submission must stand, and no other task of a bulk
submit may be lost with it; the task in `submitted` with nothing planned is the
durable record, which the beat's reaper finds (VERIFY_STALL_AFTER_S later, when the
default queue is empty) and asks for again. verify_version is idempotent, so a
resend that meets a message still in flight runs nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evaluation.models import Verification, VerificationState
from evaluation.queues import queued_messages
from evaluation.tasks import verify_version
from tasks_app.models import State, Task, Transition
from tasks_app.services.bulk import tasks_bulk_transition
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.test_celery_workers import _assert_complete_and_unique, _submitted_clamp, _wait, _wait_state
from tests.evaluation.workers import producer_on
from tests.factories import make_task

from .test_broker_restart import FAST, _start_beat, _stop

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap, pytest.mark.slow]

# Nothing listens on port 1: a publish there is refused, as by a broker that is down.
UNREACHABLE = "redis://127.0.0.1:1/0"


def test_a_submit_while_the_broker_is_unreachable_stands_and_the_reaper_gets_it_verified(
    curator: Any, broker: Any, workers: Any, settings: Any, tmp_path: Path, caplog: Any, monkeypatch: Any
) -> None:
    import evaluation.tasks

    monkeypatch.setattr(evaluation.tasks, "_enqueue_failed_at", None)  # and put back: other tests enqueue
    settings.VERIFICATION = {**settings.VERIFICATION, "ON_SUBMIT": True}
    for n in range(5):
        make_task(owner=curator, slug=f"lost-{n}", tags=["lost"])
    caplog.set_level(logging.WARNING, logger="evaluation.tasks")
    with producer_on(broker, UNREACHABLE, {}):
        started = time.monotonic()
        result = tasks_bulk_transition(
            actor=curator, queryset=Task.objects.filter(tags__name="lost"), to_state="submitted"
        )
        bulk_s = time.monotonic() - started
    assert result.applied == 5 and not result.skipped  # every submission stands
    assert set(Task.objects.filter(tags__name="lost").values_list("state", flat=True)) == {State.SUBMITTED}
    assert not Verification.objects.exists() and queued_messages("celery") == 0  # the messages are lost
    tried = [r for r in caplog.records if "not enqueued, the reaper will" in r.getMessage()]
    skipped = [r for r in caplog.records if "the broker failed just now" in r.getMessage()]
    assert (len(tried), len(skipped)) == (1, 4)  # one refused publish, not five

    env = {"VERIFY_STALL_AFTER_S": "3", "VERIFY_ON_SUBMIT": "1", **FAST}
    workers.start("w1@host-a", **env)
    beat = _start_beat({**workers.base_env, **env, "VERIFY_REAP_EVERY_S": "2"}, tmp_path)
    try:

        def all_decided() -> bool:
            states = set(Task.objects.filter(tags__name="lost").values_list("state", flat=True))
            return states <= {State.VERIFIED, State.FLAGGED}

        _wait(workers, all_decided, timeout=180, what="the five lost verifications to be asked for again and run")
    finally:
        _stop(beat)
    for task in Task.objects.filter(tags__name="lost"):
        verification = Verification.objects.get(version_id=task.latest_version_id)
        assert verification.state == VerificationState.DONE
        _assert_complete_and_unique(verification)
    print(f"\n[lost on submit] a bulk submit of 5 with the broker unreachable took {bulk_s:.1f} s; "
          "the reaper had all five verified")  # fmt: skip


def test_verify_version_sent_twice_runs_each_execution_once_and_decides_once(curator: Any, workers: Any) -> None:
    """What the reaper's resend may meet: the first message still in flight."""
    workers.start("w1@host-a", "w2@host-b", **FAST)
    task = _submitted_clamp(curator, slug="sent-twice")
    verify_version.delay(task.latest_version_id)
    verify_version.delay(task.latest_version_id)
    verification = _wait_state(workers, task.latest_version_id, VerificationState.DONE, timeout=120)
    time.sleep(2)  # the second message's finish, if it came after, has had its go

    executions = _assert_complete_and_unique(verification)
    assert Counter(e.attempts for e in executions) == {1: len(executions)}  # nothing ran twice
    assert Verification.objects.filter(version_id=task.latest_version_id).count() == 1
    decided = Transition.objects.filter(task=task, from_state=State.SUBMITTED).values_list("to_state", flat=True)
    assert list(decided) == [State.VERIFIED]
    assert verification.flags.count() == len({f.code for f in verification.flags.all()})  # no flag twice
