"""One of everything the API serves, for the tests that walk or fuzz every endpoint:
an approved task and a draft, a pool with a snapshot, a training job on it, and a
reward batch of that job."""

from __future__ import annotations

from typing import Any

from tests.factories import make_task
from tests.trainer_bridge.test_pools import _approved
from trainer_bridge.services import rewards
from trainer_bridge.services.jobs import job_register
from trainer_bridge.services.pools import pool_create, snapshot_create


def api_world(curator: Any, reviewer: Any, trainer: Any, *, prefix: str) -> dict[str, Any]:
    task = _approved(curator, reviewer, f"{prefix}-task")
    make_task(owner=curator, slug=f"{prefix}-draft", statement="Another statement.")
    pool = pool_create(slug=f"{prefix}-pool", title=prefix.title(), criteria={})
    snapshot, _ = snapshot_create(pool=pool)
    job = job_register(user=trainer, name=f"{prefix}-job", snapshot_hash=snapshot.hash)
    request = rewards.parse_batch({"completions": [{"version_hash": task.approved_version.content_hash,
                                                    "completion": "def add(a, b):\n    return a + b\n"}]})  # fmt: skip
    batch, _ = rewards.rewards_submit(user=trainer, request=request, job=job.job)
    return {"task": task, "pool": pool, "snapshot": snapshot, "job": job, "batch": batch}
