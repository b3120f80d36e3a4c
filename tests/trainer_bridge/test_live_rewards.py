"""The trainer's side against a live platform: real HTTP (the live server), a real
Celery worker on a real Redis broker, real sandboxes, the Python client and the
three trainer adapters (TRL, verl, OpenRLHF).

A job is registered over HTTP; its token exports its snapshot (and loads it with
Hugging Face `datasets`), cannot read another, gets rewards through every
adapter, and posts its metrics and rollouts, which its page then shows. With a
worker whose sandboxes cannot start, every adapter reports the failure as a
failure (no reward, 503, an exception), never as a reward of 0.
"""

from __future__ import annotations

import threading

import pytest
import requests
from django.db.models import Q

from tests.evaluation.conftest import needs_bwrap
from trainer_bridge.adapters import openrlhf, verl
from trainer_bridge.adapters.trl import PlatformReward
from trainer_bridge.client import PlatformClient, PlatformError, RewardUnavailable
from trainer_bridge.models import TrainingJob
from trainer_bridge.services.pools import pool_create, snapshot_create

from .test_pools import _approved
from .test_rewards import CORRECT, WRONG

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

PROMPT = "<|user|>Write add(a, b).<|assistant|>"


@pytest.fixture
def snapshots(curator, reviewer):
    _approved(curator, reviewer, "add-a")
    _approved(curator, reviewer, "text-b", tags=("strings",), statement="Add, but for strings.")
    mine = snapshot_create(pool=pool_create(slug="numbers", title="Numbers", criteria={"tags_exclude": ["strings"]}))
    other = snapshot_create(pool=pool_create(slug="text", title="Text", criteria={"tags_include": ["strings"]}))
    return mine[0], other[0]


@pytest.fixture
def platform(live_server, trainer, api_as, monkeypatch):
    """The trainer's client against the live server."""
    from django.db import connection

    from tasks_app.services import api_token_create

    # The live server's request threads close their connections as they end, so the
    # test database can be dropped afterwards.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)

    issued = api_token_create(user=trainer, name="laptop", scopes=["read", "write", "export", "reward"])
    return PlatformClient(live_server.url, issued.secret, timeout_s=30)


def _openrlhf(client: PlatformClient):
    server = openrlhf.make_server(client, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/get_reward"


def test_a_job_exports_scores_and_reports_through_every_adapter(snapshots, platform, live_server, workers, tmp_path,
                                                                monkeypatch):  # fmt: skip
    mine, other = snapshots
    workers.start("rewards@host-a", pool="threads")  # as docs/rewards.md runs a sandbox worker
    registered = platform.register_job(name="grpo-1", snapshot=mine.hash, steps_total=2)
    job = PlatformClient(live_server.url, registered["token"], timeout_s=30)
    assert registered["state"] == "registered" and registered["snapshot"] == mine.hash

    # Its snapshot, streamed to a file and loaded with `datasets`; not another pool's.
    path = job.export(pool="numbers", snapshot=mine.hash, path=tmp_path / "numbers.jsonl")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    assert rows["task_id"] == ["add-a"] and "hidden" not in rows[0]["tests"]
    assert job.export(pool="numbers", snapshot=mine.hash, path=path) == path  # 304: kept as it is
    with pytest.raises(PlatformError) as refused:
        job.export(pool="text", snapshot=other.hash, path=tmp_path / "text.jsonl")
    assert refused.value.status == 404 and not (tmp_path / "text.jsonl").exists()
    assert [p["slug"] for p in job.pools()] == ["numbers"]
    with pytest.raises(PlatformError) as no_tasks:
        job.get_json("tasks/")  # a job's token reaches nothing but its job
    assert no_tasks.value.status == 403

    digest = rows[0]["version_hash"]
    # The client: batches, order kept.
    results = job.rewards([(digest, CORRECT), (digest, WRONG), (digest, CORRECT)], batch_size=2, deadline_s=30)
    assert [r["reward"] for r in results] == [1.0, 0.0, 1.0]
    assert [r["status"] for r in results] == ["passed", "failed", "passed"]
    # TRL: conversational and plain completions, the version from the dataset's column.
    trl_reward = PlatformReward(job)
    scores = trl_reward(prompts=[PROMPT, PROMPT],
                        completions=[[{"role": "assistant", "content": CORRECT}], WRONG],
                        version_hash=[digest, digest])  # fmt: skip
    assert scores == [1.0, 0.0] and trl_reward.__name__ == "platform_reward"
    # verl: one at a time and batched; the ground truth is the version hash.
    verl.set_client(job)
    try:
        assert verl.compute_score("platform", CORRECT, digest, {"index": 0}) == 1.0
        assert verl.compute_score_batch(["p", "p"], [WRONG, CORRECT], [{"version_hash": digest}, digest], []) == [
            0.0,
            1.0,
        ]
    finally:
        verl.set_client(None)
    # OpenRLHF: POST /get_reward with query = prompt + response and labels = version hashes.
    server, url = _openrlhf(job)
    try:
        answer = requests.post(url, json={"query": [PROMPT + CORRECT, PROMPT + WRONG], "prompts": [PROMPT, PROMPT],
                                          "labels": [digest, digest]}, timeout=120)  # fmt: skip
        assert answer.status_code == 200 and answer.json()["rewards"] == [1.0, 0.0]
        assert requests.post(url, json={"query": ["x"]}, timeout=10).status_code == 400
    finally:
        server.shutdown()
        server.server_close()

    # Metrics and rollouts come back; the job's page shows them.
    job.post_metrics(registered["id"], [{"step": 0, "values": {"reward_mean": 0.5, "loss": 0.7}},
                                        {"step": 1, "values": {"reward_mean": 0.75, "loss": 0.4}}])  # fmt: skip
    posted = job.post_rollouts(registered["id"], [{"version_hash": digest, "sample_id": f"s{n}", "passed": n % 2 == 0}
                                                  for n in range(4)])  # fmt: skip
    assert posted == {"created": 4, "skipped": 0}
    assert job.post_rollouts(registered["id"], [{"version_hash": digest, "sample_id": "s0", "passed": True}]) == {
        "created": 0,
        "skipped": 1,
    }
    assert job.set_job_state(registered["id"], "finished")["state"] == "finished"
    seen = job.job(registered["id"])
    assert seen["steps_done"] == 2 and seen["rollouts"] == 4
    assert seen["curves"]["reward_mean"] == [[0, 0.5], [1, 0.75]]
    stored = TrainingJob.objects.get(pk=registered["id"])
    assert stored.state == "finished" and stored.created_by.username == "trey"


def test_a_sandbox_that_cannot_start_is_never_a_reward_of_zero(snapshots, platform, live_server, workers):
    mine, _ = snapshots
    workers.start("broken@host-b", SANDBOX_PYTHON="/nonexistent/python3")
    registered = platform.register_job(name="grpo-2", snapshot=mine.hash)
    job = PlatformClient(live_server.url, registered["token"], timeout_s=30)
    digest = mine.members.get().content_hash

    (result,) = job.rewards([(digest, CORRECT)], sandbox_retries=1)
    assert result["status"] == "sandbox_error" and result["reward"] is None
    assert PlatformReward(job)(completions=[CORRECT], version_hash=[digest]) == [None]
    verl.set_client(job)
    try:
        with pytest.raises(RewardUnavailable):
            verl.compute_score("platform", CORRECT, digest)
    finally:
        verl.set_client(None)
    server, url = _openrlhf(job)
    try:
        answer = requests.post(url, json={"query": [CORRECT], "labels": [digest]}, timeout=120)
        assert answer.status_code == 503 and "sandbox_error" in answer.json()["error"]
    finally:
        server.shutdown()
        server.server_close()


def test_rewards_go_ahead_of_a_verification_backlog(snapshots, platform, live_server, workers, curator):
    """One worker slot; a verification queues dozens of sandbox runs of a second or more
    each; a reward batch posted behind them is answered long before they are done."""
    from evaluation.models import Verification
    from evaluation.tasks import verify_version
    from tests.evaluation.test_celery_workers import SLOW_NO_UPPER_BOUND, _submitted_clamp

    mine, _ = snapshots
    registered = platform.register_job(name="grpo-3", snapshot=mine.hash)
    job = PlatformClient(live_server.url, registered["token"], timeout_s=60)
    digest = mine.members.get().content_hash
    task = _submitted_clamp(curator, slug="backlog", adversarial=SLOW_NO_UPPER_BOUND)
    verify_version.delay(task.latest_version_id)
    workers.start("one-slot@host-c", VERIFY_REPEATS="5")

    def backlog() -> Verification | None:
        found = Verification.objects.filter(version_id=task.latest_version_id).first()
        return found if found is not None and found.total >= 20 else None

    from tests.evaluation.workers import wait_for
    from trainer_bridge.models import RewardItem

    verification = wait_for(backlog, timeout=60, what="the verification to queue its runs")
    (result,) = job.rewards([(digest, CORRECT)], deadline_s=60)
    assert result["reward"] == 1.0
    item = RewardItem.objects.get(batch__job__name="grpo-3")
    runs = verification.executions
    # Counted by the rows' own times, not by polling the verification's counters from here:
    # between two polls a worker also gets through the backlog's quick runs (the reference's,
    # the mutants'), which says nothing about who went first.
    waiting = runs.filter(Q(started_at=None) | Q(started_at__gt=item.queued_at)).count()
    went_first = runs.filter(started_at__gt=item.queued_at, started_at__lt=item.started_at).count()
    assert waiting >= 10, waiting
    # First come, first served, the reward would have waited for every run queued before
    # it (40 of 40 when the priority is taken away); ahead of them, it waits for the one
    # in hand, then at most for what the worker had already taken off the queue: one it
    # prefetched, and one taken as the reward was published but started after.
    assert went_first <= 2, (went_first, waiting)
