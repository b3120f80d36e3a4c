"""The fault drill: sandboxes killed from outside, at random moments, while a real
worker scores a reward batch of right and wrong completions. Nothing of it may
leak into the training signal: no right answer gets 0, no wrong one gets 1, and
every item ends with its true verdict (after the engine's rerun or the server's
retries) or as `sandbox_error` with no reward.

The kills are what an operator, the host's OOM killer or a crash would deal: the
init (PID 1) of a sandbox below the worker process, taking its whole sandbox down.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.evaluation.conftest import needs_bwrap
from tests.factories import make_task
from trainer_bridge.models import RewardItem
from trainer_bridge.services import rewards
from trainer_bridge.tasks import enqueue_batch

from .outside import killing, sandbox_inits

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap, pytest.mark.slow]

# Each run takes ~0.2 s of the solution's sleeping, so a kill lands mid-run as often as not.
RIGHT = "```python\nimport time\n\n\ndef add(a, b):\n    time.sleep(0.06)\n    return a + b\n```"
WRONG = "```python\nimport time\n\n\ndef add(a, b):\n    time.sleep(0.06)\n    return a - b\n```"
PER_KIND = 24


def test_sandboxes_killed_from_outside_never_leak_into_rewards(curator: Any, workers: Any) -> None:
    task = make_task(owner=curator)
    version_hash = task.latest_version.content_hash
    completions = [{"version_hash": version_hash, "completion": text, "id": f"{kind}-{i}"}
                   for i in range(PER_KIND) for kind, text in (("right", RIGHT), ("wrong", WRONG))]  # fmt: skip
    (worker,) = workers.start("drill@test", pool="threads", REWARD_CHUNK="6", SANDBOX_POOL_SIZE="2")
    batch, _ = rewards.rewards_submit(user=curator, request=rewards.parse_batch({"completions": completions}))

    with killing(lambda: [p.pid for p in sandbox_inits(worker.pid)], every_s=(0.05, 0.4), seed=19) as killer:
        enqueue_batch(batch)
        deadline = time.monotonic() + 300
        while RewardItem.objects.filter(batch=batch, finished_at__isnull=True).exists():
            assert time.monotonic() < deadline, f"the batch did not finish:\n{worker.log()[-3000:]}"
            time.sleep(0.5)
    body = rewards.batch_body(batch, reveal_hidden=True)

    assert len(killer.killed) >= 10, f"the drill killed only {len(killer.killed)} sandboxes"
    by_kind: dict[str, list[dict[str, Any]]] = {"right": [], "wrong": []}
    for item in body["results"]:
        by_kind[item["id"].split("-")[0]].append(item)
    for kind, true_status, true_reward in (("right", "passed", 1.0), ("wrong", "failed", 0.0)):
        for item in by_kind[kind]:
            verdict = (item["status"], item["reward"])
            assert verdict in ((true_status, true_reward), ("sandbox_error", None)), (kind, item)
    # The drill bit: some runs were killed and still came to their true verdict,
    # by the engine's fresh rerun or by the server's retries.
    rows = list(RewardItem.objects.filter(batch=batch).values_list("status", "result"))
    recovered = [r for status, r in rows
                 if status != "sandbox_error" and (r.get("attempts", 1) > 1 or r.get("retries"))]  # fmt: skip
    assert recovered, "no run was killed mid-way and recovered: the drill proved nothing"
    print(  # the drill's figures, for the record (pytest -s)
        f"\nfault drill: {len(killer.killed)} sandboxes killed; {len(recovered)} items recovered their true verdict; "
        f"{sum(1 for s, _ in rows if s == 'sandbox_error')} sandbox_error (null reward) of {len(rows)}; "
        f"server retries {sum(int(r.get('retries') or 0) for _, r in rows)}"
    )
