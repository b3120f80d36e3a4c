"""Celery tasks of the reward API, on the `sandbox` queue beside verification's runs.

Listed in CELERY_IMPORTS (settings) so that every worker knows them.
"""

from __future__ import annotations

from celery import shared_task

from evaluation.tasks import SANDBOX_QUEUE, SANDBOX_RUN
from trainer_bridge.services.rewards import chunks_of, reward_items_run, rewards_prune, rewards_reap


@shared_task(name="trainer_bridge.run_rewards", **{**SANDBOX_RUN, "retry_backoff": 1, "retry_backoff_max": 10})
def run_rewards(self, item_ids: list[int]) -> int:
    """Run one chunk of a reward batch. Idempotent: runs only what it can claim.
    A caller is waiting, so a busy pool is retried after about a second, not minutes."""
    return reward_items_run(item_ids=item_ids, worker=self.request.hostname or None)


def enqueue_batch(batch: object, *, only_unfinished: bool = False) -> int:
    """One message per chunk of the batch; returns how many were sent."""
    chunks = chunks_of(batch, only_unfinished=only_unfinished)  # type: ignore[arg-type]
    for ids in chunks:
        run_rewards.apply_async((ids,), queue=SANDBOX_QUEUE)
    return len(chunks)


@shared_task(name="trainer_bridge.prune_rewards")
def prune_rewards() -> int:
    """Periodic (beat): forget finished reward batches past their retention."""
    return rewards_prune()


@shared_task(name="trainer_bridge.reap_rewards")
def reap_rewards() -> int:
    """Periodic (beat): send again what was left behind; give up on what waited an hour."""
    chunks, _ = rewards_reap()
    for ids in chunks:
        run_rewards.apply_async((ids,), queue=SANDBOX_QUEUE)
    return len(chunks)
