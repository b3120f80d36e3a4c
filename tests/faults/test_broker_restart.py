"""The broker restarted in the middle of a verification, on real workers.

A Redis that keeps its data (an append-only file, as platform/compose.yaml runs it)
comes back with every queued and unacknowledged message: the workers reconnect and
the verification finishes by itself. A Redis that keeps nothing comes back empty:
nothing would ever deliver the remaining executions, and the beat's reaper, finding
the sandbox queue empty and the verification without progress, sends them again.
Either way no execution is lost and none is recorded twice.

The broker here is a redis-server of the test's own (tests/faults/services.py): the
shared one on 6379 serves every other test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from evaluation.models import Execution, Verification, VerificationState
from evaluation.queues import queued_messages
from evaluation.tasks import SANDBOX_QUEUE, verify_version
from evaluation.verification.reaper import verifications_reap
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.test_celery_workers import (
    SLOW_NO_UPPER_BOUND,
    _assert_complete_and_unique,
    _submitted_clamp,
    _verification,
    _wait,
    _wait_state,
)
from tests.evaluation.workers import CELERY, ROOT, VISIBILITY_TIMEOUT_S, producer_on

from .services import PrivateRedis

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap, pytest.mark.slow]

FAST = {"VERIFY_REPEATS": "2", "VERIFY_MUTANTS": "6", "VERIFY_STALE_AFTER_S": "3",
        "CELERY_UNACKED_RESTORE_INTERVAL": "1", "CELERY_UNACKED_RESTORE_THROTTLE": "1"}  # fmt: skip


@pytest.fixture
def private_redis(request: Any, tmp_path: Path) -> Any:
    server = PrivateRedis(tmp_path, persistent=request.param).start()
    yield server
    server.stop()


def _start_beat(env: dict[str, str], folder: Path) -> subprocess.Popen:
    log = (folder / "beat.log").open("wb")
    try:
        return subprocess.Popen(
            [str(CELERY), "-A", "config", "beat", "-s", str(folder / "beat-schedule"), "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    finally:
        log.close()


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@pytest.mark.parametrize(
    ("private_redis", "reaper"),
    [(True, False), (False, True)],
    ids=["redis-keeps-its-data", "redis-loses-its-data"],
    indirect=["private_redis"],
)
def test_a_broker_restarted_mid_verification_loses_and_duplicates_nothing(
    curator: Any, broker: Any, workers: Any, private_redis: PrivateRedis, reaper: bool, tmp_path: Path
) -> None:
    # What recovers a broker that kept nothing: the beat's reaper (every 2 s here), run by
    # the worker, which finds a verification quiet for 4 s while the sandbox queue is empty.
    env = {"CELERY_BROKER_URL": private_redis.url, "VERIFY_STALL_AFTER_S": "4", **FAST}
    workers.start("w1@host-a", **env)
    beat = _start_beat({**workers.base_env, **env, "VERIFY_REAP_EVERY_S": "2"}, tmp_path) if reaper else None
    try:
        task = _submitted_clamp(curator, slug="broker-restart", adversarial=SLOW_NO_UPPER_BOUND)
        version_pk = task.latest_version_id
        with producer_on(broker, private_redis.url, {"visibility_timeout": VISIBILITY_TIMEOUT_S}):
            verify_version.delay(version_pk)

        def under_way() -> Verification | None:
            verification = _verification(version_pk)
            return verification if verification is not None and 2 <= verification.done < verification.total else None

        before = _wait(workers, under_way, timeout=90, what="the verification to be under way")
        private_redis.restart()
        restarted_at = time.monotonic()
        verification = _wait_state(workers, version_pk, VerificationState.DONE, timeout=120)
        recovered_s = time.monotonic() - restarted_at
    finally:
        if beat is not None:
            _stop(beat)

    executions = _assert_complete_and_unique(verification)
    assert all(e.attempts <= 2 for e in executions), [(e.subject, e.attempts) for e in executions]
    assert before.done < verification.total  # the restart really fell in the middle
    print(f"\n[broker restart, persistent={private_redis.persistent}] {verification.total} executions, "
          f"restarted at done={before.done}, finished {recovered_s:.1f} s later")  # fmt: skip


# -- the reaper's rule, without workers ---------------------------------------------------------


def _running_verification(curator: Any, *, quiet_for_s: float, slug: str) -> Verification:
    task = _submitted_clamp(curator, slug=slug)
    then = timezone.now() - timedelta(seconds=quiet_for_s)
    verification = Verification.objects.create(
        version_id=task.latest_version_id, config_hash=slug.ljust(64, "0"), config={}, total=2,
        state=VerificationState.RUNNING, started_at=then, deadline_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    for repeat in range(2):
        Execution.objects.create(verification=verification, key=f"{slug}-{repeat}", role="reference",
                                 subject="ref", repeat=repeat, status="pending")  # fmt: skip
    return verification


def test_a_quiet_verification_is_resent_only_when_the_sandbox_queue_is_empty(curator: Any, settings: Any) -> None:
    settings.VERIFICATION = {**settings.VERIFICATION, "STALL_AFTER_S": 60}
    quiet = _running_verification(curator, quiet_for_s=120, slug="quiet")
    busy = _running_verification(curator, quiet_for_s=120, slug="busy")
    Execution.objects.filter(verification=busy, repeat=0).update(status="running", started_at=timezone.now())

    assert verifications_reap(queue_idle=False) == []  # messages wait: a backlog, not a loss
    resumed = dict(verifications_reap(queue_idle=True))
    assert set(resumed) == {quiet.pk}  # the other one moved within the minute
    assert sorted(resumed[quiet.pk]) == sorted(quiet.executions.values_list("pk", flat=True))


def test_the_sandbox_queue_is_counted_by_the_broker(broker: Any) -> None:
    assert queued_messages(SANDBOX_QUEUE) == 0
    for n in range(3):
        broker.send_task("evaluation.no_such_task", args=(n,), queue=SANDBOX_QUEUE)
    assert queued_messages(SANDBOX_QUEUE) == 3


def test_a_submitted_version_never_planned_is_asked_for_again(curator: Any, settings: Any) -> None:
    """A verify_version message lost before the worker recorded anything leaves no row
    that a stalled-verification rule could find: the task just sits in `submitted`."""
    from evaluation.verification.config import VerifyConfig
    from evaluation.verification.reaper import versions_unplanned
    from tasks_app.models import Task

    settings.VERIFICATION = {**settings.VERIFICATION, "STALL_AFTER_S": 60, "ON_SUBMIT": True}
    config_hash = VerifyConfig.from_settings().hash()
    long_ago = timezone.now() - timedelta(seconds=120)

    def submitted(slug: str, *, state: str | None = None, config: str = config_hash, quiet: bool = True) -> int:
        task = _submitted_clamp(curator, slug=slug)
        if state is not None:
            Verification.objects.create(version_id=task.latest_version_id, config_hash=config, config={}, state=state)
        if quiet:
            Task.objects.filter(pk=task.pk).update(updated_at=long_ago)
        return task.latest_version_id

    lost = submitted("lost")
    queued_only = submitted("queued-only", state=VerificationState.QUEUED)  # its planner died before planning
    other_config = submitted("other-config", state=VerificationState.DONE, config="f" * 64)
    submitted("running", state=VerificationState.RUNNING)
    submitted("recent", quiet=False)
    draft = submitted("draft")
    Task.objects.filter(latest_version_id=draft).update(state="draft", updated_at=long_ago)

    assert sorted(versions_unplanned()) == sorted([lost, queued_only, other_config])
    settings.VERIFICATION = {**settings.VERIFICATION, "ON_SUBMIT": False}
    assert versions_unplanned() == []  # submitting starts nothing here: nothing was lost


@pytest.mark.parametrize("private_redis", [False], ids=["redis-loses-its-data"], indirect=True)
def test_a_verification_whose_message_the_broker_lost_before_any_worker_saw_it_still_runs(
    curator: Any, broker: Any, workers: Any, private_redis: PrivateRedis, tmp_path: Path, settings: Any
) -> None:
    """Submitted while no worker runs, the message is lost with a Redis that keeps
    nothing; once workers and the beat are up, the reaper finds the task quiet in
    `submitted` with nothing planned and asks for its verification again."""
    settings.VERIFICATION = {**settings.VERIFICATION, "ON_SUBMIT": True}
    with producer_on(broker, private_redis.url, {"visibility_timeout": VISIBILITY_TIMEOUT_S}):
        task = _submitted_clamp(curator, slug="lost-on-submit")  # verify_version goes to the private Redis
        assert queued_messages("celery") == 1
    private_redis.restart()  # comes back empty
    with producer_on(broker, private_redis.url, {"visibility_timeout": VISIBILITY_TIMEOUT_S}):
        assert queued_messages("celery") == 0

    env = {"CELERY_BROKER_URL": private_redis.url, "VERIFY_STALL_AFTER_S": "3", "VERIFY_ON_SUBMIT": "1", **FAST}
    workers.start("w1@host-a", **env)
    beat = _start_beat({**workers.base_env, **env, "VERIFY_REAP_EVERY_S": "2"}, tmp_path)
    try:
        verification = _wait_state(workers, task.latest_version_id, VerificationState.DONE, timeout=120)
    finally:
        _stop(beat)
    _assert_complete_and_unique(verification)
    task.refresh_from_db()
    assert task.state != "submitted"
