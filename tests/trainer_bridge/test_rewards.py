"""The reward API's services and view, with real sandboxes in this process: each
completion gets its verdict and reward, a broken sandbox is `sandbox_error` with
no reward (never 0), fraction mode never pays a non-pass in full, an idempotency
key makes a retry free, a job's token is held to its snapshot, a full queue is a
429 with Retry-After, and bad bodies are refused whole, naming the field."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.sandbox import engine
from tasks_app.errors import Conflict, PermissionDenied, TooBusy, ValidationFailed
from tests.evaluation.conftest import needs_bwrap
from tests.factories import make_task
from trainer_bridge.models import RewardBatch, RewardItem
from trainer_bridge.services import reward_rows, reward_runs, rewards
from trainer_bridge.services.jobs import job_register
from trainer_bridge.services.pools import pool_create, snapshot_create

from .test_pools import _approved

CORRECT = "Here you go:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
HALF = "```python\ndef add(a, b):\n    return 3 if (a, b) == (1, 2) else -1\n```"  # passes the visible test only
BROKEN = "```python\ndef add(a, b) return a + b\n```"
EXITS = "```python\nimport os\nos._exit(0)\n```"


def _hash(task) -> str:
    return task.latest_version.content_hash


def _request(completions, **body):
    return rewards.parse_batch({"completions": completions, **body})


def _run(batch) -> dict:
    for chunk in rewards.chunks_of(batch):
        reward_runs.reward_items_run(item_ids=chunk)
    return rewards.batch_body(batch, reveal_hidden=False)


@pytest.fixture(autouse=True)
def _fresh_pools():
    engine.close_pools()
    yield
    engine.close_pools()


# -- checking the body (no sandbox needed) ---------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        ({}, "completions"),
        ({"completions": []}, "completions"),
        ({"completions": [{"version_hash": "abc", "completion": "x"}]}, "completions[0].version_hash"),
        ({"completions": [{"version_hash": "a" * 64, "completion": 3}]}, "completions[0].completion"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x\x00"}]}, "completions[0].completion"),
        ({"completions": ["text"]}, "completions[0]"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x"}], "reward": "partial"}, "reward"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x"}], "deadline_s": 0}, "deadline_s"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x"}], "deadline_s": 1e9}, "deadline_s"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x"}], "seed": -1}, "seed"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x"}], "extra": 1}, "body"),
        ({"completions": [{"version_hash": "a" * 64, "completion": "x", "id": ["x"]}]}, "completions[0].id"),
    ],
)
def test_a_bad_body_is_refused_whole_naming_the_field(body, field):
    with pytest.raises(ValidationFailed) as caught:
        rewards.parse_batch(body)
    assert field in caught.value.details, caught.value.details


def test_too_many_or_too_long_completions_are_refused(settings):
    settings.REWARD = {"MAX_BATCH": 2, "MAX_COMPLETION_BYTES": 10}
    item = {"version_hash": "a" * 64, "completion": "x"}
    with pytest.raises(ValidationFailed, match="At most 2"):
        rewards.parse_batch({"completions": [item] * 3})
    with pytest.raises(ValidationFailed) as caught:
        rewards.parse_batch({"completions": [{**item, "completion": "é" * 6}]})
    assert "completions[0].completion" in caught.value.details


@pytest.mark.django_db
def test_an_unknown_version_hash_stores_nothing(curator):
    task = make_task(owner=curator)
    request = _request([{"version_hash": _hash(task), "completion": CORRECT},
                        {"version_hash": "b" * 64, "completion": CORRECT}])  # fmt: skip
    with pytest.raises(ValidationFailed) as caught:
        rewards.rewards_submit(user=curator, request=request)
    assert list(caught.value.details) == ["completions[1].version_hash"]
    assert not RewardBatch.objects.exists() and not RewardItem.objects.exists()


def test_rewards_for_each_verdict():
    assert reward_runs.reward_for("passed", 3, 3, "binary") == 1.0
    assert reward_runs.reward_for("failed", 2, 3, "binary") == 0.0
    assert reward_runs.reward_for("sandbox_error", 0, 3, "binary") is None
    assert reward_runs.reward_for("sandbox_error", 0, 3, "fraction") is None
    assert reward_runs.reward_for("failed", 2, 4, "fraction") == 0.5
    # Every test reached passed, yet the run did not pass (it hung or exited early): never the full reward.
    assert reward_runs.reward_for("timeout", 3, 3, "fraction") == pytest.approx(2 / 3)
    assert reward_runs.reward_for("error", 0, 0, "fraction") == 0.0


# -- running, in real sandboxes ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_each_completion_gets_its_verdict_and_reward(curator):
    task = make_task(owner=curator)
    body = [{"version_hash": _hash(task), "completion": text, "id": name}
            for name, text in [("ok", CORRECT), ("wrong", WRONG), ("half", HALF), ("broken", BROKEN),
                               ("exits", EXITS)]]  # fmt: skip
    batch, created = rewards.rewards_submit(user=curator, request=_request(body))
    assert created and batch.items.count() == 5
    answer = _run(batch)
    by_id = {r["id"]: r for r in answer["results"]}
    assert answer["state"] == "done" and [r["index"] for r in answer["results"]] == [0, 1, 2, 3, 4]
    assert (by_id["ok"]["status"], by_id["ok"]["reward"]) == ("passed", 1.0)
    assert by_id["ok"]["tests"] == {"passed": 3, "total": 3, "failures": []}
    assert (by_id["wrong"]["status"], by_id["wrong"]["reward"]) == ("failed", 0.0)
    assert (by_id["half"]["status"], by_id["half"]["reward"]) == ("failed", 0.0)
    assert by_id["half"]["tests"]["passed"] == 1
    hidden = [f for f in by_id["half"]["tests"]["failures"] if f["name"].startswith("hidden")]
    assert hidden and all(f["message"] == "(hidden test)" for f in hidden)  # a policy never reads hidden tests
    assert (by_id["broken"]["status"], by_id["broken"]["reward"]) == ("error", 0.0)
    assert "SyntaxError" in by_id["broken"]["stderr"] + by_id["broken"]["message"]
    assert by_id["exits"]["reward"] == 0.0 and by_id["exits"]["status"] != "passed"  # os._exit(0) is no pass
    assert all(r["timings"]["wall_s"] is not None and r["request_digest"] for r in answer["results"])
    batch.refresh_from_db()
    assert batch.finished_at is not None
    # The chunk's message delivered again runs nothing again.
    assert reward_runs.reward_items_run(item_ids=list(batch.items.values_list("pk", flat=True))) == 0

    revealed = rewards.batch_body(batch, reveal_hidden=True)["results"][2]["tests"]["failures"]
    assert all(f["message"] != "(hidden test)" for f in revealed), revealed


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_fraction_mode_pays_the_share_of_tests_passed(curator):
    task = make_task(owner=curator)
    batch, _ = rewards.rewards_submit(user=curator, request=_request(
        [{"version_hash": _hash(task), "completion": HALF}, {"version_hash": _hash(task), "completion": CORRECT}],
        reward="fraction"))  # fmt: skip
    results = _run(batch)["results"]
    assert results[0]["reward"] == pytest.approx(1 / 3) and results[1]["reward"] == 1.0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_broken_sandbox_is_sandbox_error_with_no_reward(curator, monkeypatch):
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")  # the sandbox cannot start: our fault
    task = make_task(owner=curator)
    batch, _ = rewards.rewards_submit(user=curator, request=_request([{"version_hash": _hash(task),
                                                                       "completion": WRONG}]))  # fmt: skip
    (result,) = _run(batch)["results"]
    assert result["status"] == "sandbox_error" and result["reward"] is None
    assert "start_failed" in result["message"]


@pytest.mark.django_db
def test_an_idempotency_key_makes_a_retry_free_and_cannot_be_reused(curator):
    task = make_task(owner=curator)
    body = [{"version_hash": _hash(task), "completion": CORRECT}]
    first, created = rewards.rewards_submit(user=curator, request=_request(body, idempotency_key="step-1"))
    again, created_again = rewards.rewards_submit(user=curator, request=_request(body, idempotency_key="step-1"))
    assert created and not created_again and again.pk == first.pk and RewardItem.objects.count() == 1
    with pytest.raises(Conflict) as caught:
        rewards.rewards_submit(user=curator, request=_request(body, idempotency_key="step-1", seed=7))
    assert "idempotency_key" in caught.value.details
    # Keys are per user: someone else's "step-1" is their own batch.
    from tests.factories import UserFactory

    other = UserFactory(username="otto", roles=["reviewer"])
    theirs, created = rewards.rewards_submit(user=other, request=_request(body, idempotency_key="step-1"))
    assert created and theirs.pk != first.pk


@pytest.mark.django_db
def test_a_full_queue_answers_busy_with_retry_after(curator, settings, api_as):
    settings.REWARD = {**rewards.options(), "MAX_IN_FLIGHT": 2}
    task = make_task(owner=curator)
    body = [{"version_hash": _hash(task), "completion": CORRECT}] * 2
    rewards.rewards_submit(user=curator, request=_request(body))  # two waiting: the queue is full
    with pytest.raises(TooBusy) as caught:
        rewards.rewards_submit(user=curator, request=_request(body[:1]))
    assert 1 <= caught.value.retry_after <= 60
    response = api_as(curator, ["reward"]).post(reverse("api-rewards"), {"completions": body[:1]}, format="json")
    assert response.status_code == 429 and 1 <= int(response["Retry-After"]) <= 60
    assert response.json()["error"]["code"] == "busy"
    assert RewardBatch.objects.count() == 1  # nothing stored for the refused batch


# Two submitting threads need a real database: SQLite's test database is in memory,
# shared between threads by a cache that locks tables outright instead of waiting.
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_batches_counted_side_by_side_never_pass_the_limit_together(curator, settings, monkeypatch):
    """Admission is counted and inserted under one lock: the second submitter counts
    only once the first has committed. The first's insert is slowed to hold the window
    open; counted side by side, both batches of 2 would fit a limit of 2."""
    import threading
    import time

    from django.db import connection

    settings.REWARD = {**rewards.options(), "MAX_IN_FLIGHT": 2}
    task = make_task(owner=curator)
    body = [{"version_hash": _hash(task), "completion": CORRECT}] * 2
    insert = reward_rows.reward_batch_insert
    monkeypatch.setattr(reward_rows, "reward_batch_insert", lambda batch: (insert(batch), time.sleep(0.5)))
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def submit() -> None:
        start.wait()
        try:
            rewards.rewards_submit(user=curator, request=_request(body))
            outcomes.append("stored")
        except TooBusy:
            outcomes.append("busy")
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["busy", "stored"]
    assert RewardItem.objects.count() == 2


@pytest.mark.django_db
def test_retry_after_reads_the_rate_of_a_burst_after_a_quiet_spell(curator):
    from datetime import timedelta

    from django.utils import timezone

    task = make_task(owner=curator)
    body = [{"version_hash": _hash(task), "completion": CORRECT}] * 20
    batch, _ = rewards.rewards_submit(user=curator, request=_request(body))
    now = timezone.now()
    for n, item in enumerate(batch.items.order_by("index")):  # 20 verdicts in the last 2 s, none before
        RewardItem.objects.filter(pk=item.pk).update(status="passed", finished_at=now - timedelta(seconds=n / 10))
    # 10 completions a second: 30 waiting drain in ~3 s. Over the whole minute the rate
    # would read 0.33/s, and the answer the 60 s cap.
    assert rewards._retry_after(30) <= 4


@pytest.mark.django_db
def test_a_job_token_asks_only_for_its_own_snapshot(curator, reviewer, trainer):
    inside = _approved(curator, reviewer, "inside")
    pool = pool_create(slug="only-inside", title="x", criteria={"tags_exclude": ["strings"]})
    _approved(curator, reviewer, "outside", tags=("strings",))
    snapshot, _ = snapshot_create(pool=pool)
    registered = job_register(user=trainer, name="run-1", snapshot_hash=snapshot.hash)
    outside = make_task(owner=curator, slug="draft", statement="Add two numbers, again.")
    request = _request([{"version_hash": inside.approved_version.content_hash, "completion": CORRECT},
                        {"version_hash": _hash(outside), "completion": CORRECT}])  # fmt: skip
    with pytest.raises(PermissionDenied) as caught:
        rewards.rewards_submit(user=trainer, request=request, job=registered.job)
    assert list(caught.value.details) == ["completions[1].version_hash"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_the_api_answers_verdicts_from_a_real_worker(curator, api_as, workers):
    workers.start("rewards-api@host-a")
    task = make_task(owner=curator)
    client = api_as(curator, ["reward"])
    body = {"completions": [{"version_hash": _hash(task), "completion": CORRECT, "id": "a"},
                            {"version_hash": _hash(task), "completion": WRONG, "id": 7}], "deadline_s": 60}  # fmt: skip
    response = client.post(reverse("api-rewards"), body, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert response.status_code == 200, response.json()
    answer = response.json()
    assert [r["reward"] for r in answer["results"]] == [1.0, 0.0] and answer["results"][1]["id"] == "7"
    assert answer["counts"] == {"failed": 1, "passed": 1} and not answer["replayed"]
    replay = client.post(reverse("api-rewards"), body, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert replay.status_code == 200 and replay.json()["replayed"] and replay.json()["id"] == answer["id"]
    assert RewardItem.objects.count() == 2  # the retry ran nothing
    fetched = client.get(reverse("api-reward-batch", args=[answer["id"]]))
    assert fetched.status_code == 200 and fetched.json()["results"] == answer["results"]
    assert client.get(reverse("api-reward-batch", args=["not-a-uuid"])).status_code == 404
    assert client.get(reverse("api-reward-batch", args=[answer["id"]]) + "?wait=x").status_code == 400
    no_scope = api_as(curator, ["read"]).post(reverse("api-rewards"), body, format="json")
    assert no_scope.status_code == 403 and "reward" in no_scope.json()["error"]["message"]


@pytest.mark.django_db
def test_items_left_behind_are_sent_again_and_given_up_after_an_hour(curator):
    from datetime import timedelta

    from django.utils import timezone

    task = make_task(owner=curator)
    batch, _ = rewards.rewards_submit(user=curator, request=_request([{"version_hash": _hash(task),
                                                                       "completion": CORRECT}] * 3))  # fmt: skip
    items = list(batch.items.order_by("index"))
    assert reward_runs.rewards_reap() == ([], 0)  # just queued: left alone
    RewardItem.objects.filter(pk=items[0].pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    RewardItem.objects.filter(pk=items[1].pk).update(queued_at=timezone.now() - timedelta(hours=2))
    chunks, given_up = reward_runs.rewards_reap()
    assert chunks == [[items[0].pk]] and given_up == 1
    lost = RewardItem.objects.get(pk=items[1].pk)
    assert lost.status == "sandbox_error" and lost.reward is None and lost.finished_at is not None
    assert rewards.in_flight() == 2


@pytest.mark.django_db
def test_a_trainer_without_a_job_token_asks_only_for_their_jobs_snapshots(curator, reviewer, trainer):
    inside = _approved(curator, reviewer, "theirs")
    draft = make_task(owner=curator, slug="not-theirs", statement="Not in any snapshot.")
    request = _request([{"version_hash": inside.approved_version.content_hash, "completion": CORRECT}])
    with pytest.raises(PermissionDenied):
        rewards.rewards_submit(user=trainer, request=request)  # no job yet
    snapshot, _ = snapshot_create(pool=pool_create(slug="theirs", title="x", criteria={}))
    job_register(user=trainer, name="mine", snapshot_hash=snapshot.hash)
    assert rewards.rewards_submit(user=trainer, request=request)[1]
    with pytest.raises(PermissionDenied):
        rewards.rewards_submit(user=trainer, request=_request([{"version_hash": _hash(draft), "completion": CORRECT}]))
    # Curators and reviewers score any version (a draft's too).
    assert rewards.rewards_submit(
        user=curator, request=_request([{"version_hash": _hash(draft), "completion": CORRECT}])
    )[1]


def test_reward_chunks_queue_where_they_go_first(broker):
    from trainer_bridge.tasks import reward_queue

    assert reward_queue() == "sandbox"  # Redis: the sandbox queue, at priority 0


def test_on_the_filesystem_broker_reward_chunks_have_a_queue_of_their_own(settings):
    from config.celery import app
    from trainer_bridge.tasks import reward_queue

    assert str(app.conf.broker_url).startswith("filesystem") and reward_queue() == "rewards"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_function_task_in_another_language_is_rewarded_from_the_completions_fenced_code(curator):
    from tests.evaluation.function_samples import HIDDEN, RIGHT, SIGNATURE, VISIBLE, WRONG

    reference = [{"role": "reference", "label": "ref", "code": RIGHT["go"]}]
    task = make_task(owner=curator, slug="top-k-go", suite_kind="function_calls", language="go", entry_point="top_k",
                     starter_code="package main\n", test_setup="", signature=SIGNATURE, visible_tests=VISIBLE,
                     hidden_tests=HIDDEN, solutions=reference)  # fmt: skip
    fake = ("package main\nimport (\"fmt\"; \"os\")\nfunc top_k(xs []int, k int) []int {\n"
            "\tfmt.Print(\"\\n@@tp-result@@\\n2 5 4\\n\"); os.Exit(0); return nil\n}\n")  # fmt: skip
    body = [{"version_hash": _hash(task), "completion": f"Here:\n```go\n{code}```\n", "id": name}
            for name, code in (("right", RIGHT["go"]), ("wrong", WRONG["go"]), ("fake", fake),
                               ("other", "package main\nfunc top_k(xs []int) []int { return xs }\n"))]  # fmt: skip
    batch, _ = rewards.rewards_submit(user=curator, request=_request(body))
    by_id = {r["id"]: r for r in _run(batch)["results"]}
    assert (by_id["right"]["status"], by_id["right"]["reward"]) == ("passed", 1.0), by_id["right"]
    assert (by_id["wrong"]["status"], by_id["wrong"]["reward"]) == ("failed", 0.0)
    assert (by_id["fake"]["status"], by_id["fake"]["reward"]) == ("failed", 0.0)  # the visible answer, forged
    assert by_id["fake"]["tests"]["passed"] == 1
    assert (by_id["other"]["status"], by_id["other"]["reward"]) == ("compile_error", 0.0)
    assert "top_k(xs: list[int], k: int) -> list[int]" in by_id["other"]["message"]
