"""Rewards on `make run`'s own worker (platform/scripts/worker.sh) and its filesystem
broker, behind a verification backlog sent in chunks (tests/evaluation/test_embedded_pipeline.py).

The filesystem broker has no priorities: reward chunks have a queue of their own,
which the worker takes from in turn with the others, and a chunk of executions stops
starting runs while a reward chunk waits (evaluation/queues.py urgent_work_waiting).
The worker shares the test database (PostgreSQL) and a broker folder of its own; the
live server in this process publishes to that folder.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.models import Q

from evaluation.models import Verification
from evaluation.tasks import verify_version
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.test_celery_workers import SLOW_NO_UPPER_BOUND, _submitted_clamp
from tests.evaluation.test_embedded_pipeline import _embedded_env, _EmbeddedWorker
from tests.evaluation.workers import database_url, producer_on, wait_for
from trainer_bridge.client import PlatformClient
from trainer_bridge.models import RewardItem

from .test_live_rewards import platform, snapshots  # noqa: F401 - fixtures
from .test_rewards import CORRECT

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]


def test_on_make_runs_worker_a_reward_goes_ahead_of_a_chunked_verification_backlog(
    snapshots,  # noqa: F811 - the fixture
    platform,  # noqa: F811 - the fixture
    live_server,
    curator,
    tmp_path,
):
    """The filesystem broker has no priorities: reward chunks have a queue of their own,
    and a chunk of executions stops starting runs while one waits. A reward posted
    behind a backlog of slow runs waits for the runs in hand, not for the rest of the
    chunks the worker holds (with whole chunks run through, 10 and more went first)."""
    from config.celery import app

    if connection.vendor != "postgresql":
        pytest.fail("the worker shares the test database: run with DATABASE_URL on PostgreSQL (make test does)")
    var_dir = tmp_path / "var"
    folders = {name: var_dir / "celery" / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    options = {"data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
               "processed_folder": str(folders["processed"]), "control_folder": str(folders["control"]),
               "store_processed": False}  # fmt: skip
    mine, _ = snapshots
    registered = platform.register_job(name="grpo-embedded", snapshot=mine.hash)
    job = PlatformClient(live_server.url, registered["token"], timeout_s=60)
    digest = mine.members.get().content_hash
    env = _embedded_env(var_dir, DATABASE_URL=database_url(connection.settings_dict), VERIFY_REPEATS="16",
                        VERIFY_MUTANTS="4", LOG_LEVEL="WARNING")  # fmt: skip
    with producer_on(app, "filesystem://", options):
        task = _submitted_clamp(curator, slug="embedded-backlog", adversarial=SLOW_NO_UPPER_BOUND)
        worker = _EmbeddedWorker(env, tmp_path / "worker.log")
        try:
            wait_for(lambda: " ready." in worker.log() or not worker.alive(), timeout=120, what="the worker")
            assert worker.alive(), worker.log()[-4000:]
            verify_version.delay(task.latest_version_id)

            def slow_runs_going() -> Any:
                found = Verification.objects.filter(version_id=task.latest_version_id).first()
                if not worker.alive():
                    raise AssertionError(worker.log()[-4000:])
                slow = found.executions.filter(role="adversarial", status="running") if found else None
                return found if slow is not None and slow.exists() else None

            verification = wait_for(slow_runs_going, timeout=120, what="the slow runs to start")
            (result,) = job.rewards([(digest, CORRECT)], deadline_s=60)
        finally:
            worker.stop()
    assert result["reward"] == 1.0
    item = RewardItem.objects.get(batch__job__name="grpo-embedded")
    runs = verification.executions
    waiting = runs.filter(Q(started_at=None) | Q(started_at__gt=item.queued_at)).count()
    went_first = runs.filter(started_at__gt=item.queued_at, started_at__lt=item.started_at).count()
    assert waiting >= 10, waiting
    # Ahead of the backlog it waits for the runs in hand (two slots) and at most the runs a
    # chunk taken meanwhile always starts (two), and the 50 ms between two looks.
    assert went_first <= 5, (went_first, waiting, worker.log()[-3000:])
    print(f"\n[embedded reward] {went_first} runs went first, {waiting} waited; "
          f"queued to started {(item.started_at - item.queued_at).total_seconds():.2f} s")  # fmt: skip
