"""Celery tasks of the trainer bridge: thin wrappers around the services.

Reward chunks run on the `sandbox` queue beside verification's runs. Export
builds run on the default queue (they need the database and a disk, no
sandbox). Each is idempotent and acks late: a worker killed mid-build leaves
its message to be delivered again, and the build is claimed again once stale.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction

from evaluation.tasks import SANDBOX_QUEUE, SANDBOX_RUN
from tasks_app.errors import NotFound
from trainer_bridge.models import RewardBatch
from trainer_bridge.services.builds import build_run
from trainer_bridge.services.reward_runs import reward_items_run, rewards_reap
from trainer_bridge.services.rewards import chunks_of, rewards_prune


@shared_task(name="trainer_bridge.build_export", acks_late=True, reject_on_worker_lost=True)
def build_export(build_id: str) -> str:
    """Write one export build's file; its state afterwards (done, failed, or the state
    another worker holds it in)."""
    try:
        return build_run(build_id=build_id).state
    except NotFound:
        return "gone"  # its snapshot was deleted (the build with it) before a worker got to it


def enqueue_build(build: Any) -> None:
    """Queue `build` for a worker once the current transaction commits, so the worker
    finds its row."""
    build_id = str(build.pk)
    transaction.on_commit(lambda: build_export.delay(build_id))


# -- rewards ----------------------------------------------------------------------------------


@shared_task(name="trainer_bridge.run_rewards", **{**SANDBOX_RUN, "retry_backoff": 1, "retry_backoff_max": 10})
def run_rewards(self, item_ids: list[int]) -> int:
    """Run one chunk of a reward batch. Idempotent: runs only what it can claim.
    A caller is waiting, so a busy pool is retried after about a second, not minutes."""
    return reward_items_run(item_ids=item_ids, worker=self.request.hostname or None)


def reward_queue() -> str:
    """Where reward chunks go: the `sandbox` queue, ahead of verification by priority
    (Redis). The filesystem broker has no priorities, so there they get a queue of
    their own (`rewards`), which workers take from in turn with the others: a reward
    then waits for at most one run of a verification backlog, not for all of it."""
    from celery import current_app

    return "rewards" if str(current_app.conf.broker_url or "").startswith("filesystem") else SANDBOX_QUEUE


def send_chunks(chunks: list[list[int]]) -> int:
    """One message per chunk of item ids, where reward chunks go first; returns how many."""
    queue = reward_queue()
    for ids in chunks:
        run_rewards.apply_async((ids,), queue=queue, priority=settings.REWARD_PRIORITY)
    return len(chunks)


def enqueue_batch(batch: RewardBatch, *, only_unfinished: bool = False) -> int:
    """Send a batch's chunks (only those still unfinished, when asked)."""
    return send_chunks(chunks_of(batch, only_unfinished=only_unfinished))


@shared_task(name="trainer_bridge.prune_rewards")
def prune_rewards() -> int:
    """Periodic (beat): forget finished reward batches past their retention."""
    return rewards_prune()


@shared_task(name="trainer_bridge.reap_rewards")
def reap_rewards() -> int:
    """Periodic (beat): send again what was left behind; give up on what waited an hour."""
    chunks, _ = rewards_reap()
    return send_chunks(chunks)
