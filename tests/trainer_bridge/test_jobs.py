"""Training jobs: registered against a snapshot with a token bound to it, fed back
with metrics and rollouts (which count toward difficulty), moved through their
states; bad input refused whole, naming the field."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import Attempt
from tasks_app.errors import InvalidTransition, PermissionDenied, ValidationFailed
from trainer_bridge.models import TrainingJob
from trainer_bridge.services import jobs
from trainer_bridge.services.pools import pool_create, snapshot_create

from .test_pools import _approved

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot(curator, reviewer):
    for i in range(2):
        _approved(curator, reviewer, f"job-task-{i}", statement=f"Task {i}.")
    return snapshot_create(pool=pool_create(slug="jobs", title="Jobs", criteria={}))[0]


def test_registering_makes_a_token_bound_to_the_job(snapshot, trainer, api_as):
    answer = api_as(trainer, ["read", "write"]).post(
        reverse("api-jobs"), {"name": "run", "snapshot": snapshot.hash, "reward_mode": "fraction"}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    job = TrainingJob.objects.get(pk=body["id"])
    assert body["token"].startswith("tp_") and job.token.scopes == ["export", "job", "reward", "session"]
    assert job.reward_mode == "fraction" and job.solver == f"job-{job.pk}-run" and job.state == "registered"
    assert jobs.job_of_token(job.token) == job
    # A job's token registers no other job.
    from rest_framework.test import APIClient

    bound = APIClient()
    bound.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    again = bound.post(reverse("api-jobs"), {"name": "x", "snapshot": snapshot.hash}, format="json")
    assert again.status_code == 403


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"name": ""}, "name"),
        ({"name": "x\n"}, "name"),
        ({"snapshot": "f" * 64}, "snapshot"),
        ({"reward_mode": "dense"}, "reward_mode"),
        ({"solver": ""}, "solver"),
        ({"steps_total": 0}, "steps_total"),
        ({"config": [1]}, "config"),
        ({"expires_in_days": 1000}, "expires_in_days"),
    ],
)
def test_bad_registrations_name_the_field(snapshot, trainer, fields, where):
    base = {"name": "run", "snapshot_hash": snapshot.hash}
    if "snapshot" in fields:
        base["snapshot_hash"] = fields.pop("snapshot")
    with pytest.raises(ValidationFailed) as caught:
        jobs.job_register(user=trainer, **{**base, **fields})
    assert where in caught.value.details
    assert not TrainingJob.objects.exists()


def test_hidden_tests_only_for_a_caller_that_holds_them(snapshot, trainer):
    with pytest.raises(PermissionDenied):
        jobs.job_register(user=trainer, name="r", snapshot_hash=snapshot.hash, with_hidden_tests=True)
    job = jobs.job_register(user=trainer, name="r", snapshot_hash=snapshot.hash, with_hidden_tests=True,
                            may_read_hidden=True).job  # fmt: skip
    assert "export:tests" in job.token.scopes


def test_metrics_and_rollouts_come_back_and_feed_difficulty(snapshot, trainer):
    job = jobs.job_register(user=trainer, name="run", snapshot_hash=snapshot.hash).job
    digest = snapshot.members.first().content_hash
    entries = [{"step": 0, "values": {"reward_mean": 0.25}}, {"step": 1, "values": {"reward_mean": 0.5, "kl": None}}]
    assert jobs.metrics_post(job=job, entries=entries) == 2
    assert jobs.metrics_post(job=job, entries=[{"step": 1, "values": {"reward_mean": 0.6}}]) == 1  # replaced
    job.refresh_from_db()
    assert job.state == "running" and job.steps_done == 2
    assert jobs.job_curves(job) == {"reward_mean": [(0, 0.25), (1, 0.6)]}
    created, skipped = jobs.rollouts_post(job=job, outcomes=[
        {"version_hash": digest, "sample_id": "a", "passed": True},
        {"version_hash": digest, "sample_id": 2, "passed": False, "reward": 0.0}])  # fmt: skip
    assert (created, skipped) == (2, 0)
    assert jobs.rollouts_post(job=job, outcomes=[{"version_hash": digest, "sample_id": "a", "passed": True}]) == (0, 1)
    attempts = Attempt.objects.filter(solver__name=job.solver)
    assert attempts.count() == 2 and all(a.trusted for a in attempts)
    assert sorted(attempts.values_list("status", flat=True)) == ["failed", "passed"]
    job.refresh_from_db()
    assert job.rollouts == 2


@pytest.mark.parametrize(
    ("entries", "where"),
    [
        ([], "metrics"),
        ([{"step": -1, "values": {"x": 1}}], "metrics[0].step"),
        ([{"step": 0, "values": {}}], "metrics[0].values"),
        ([{"step": 0, "values": {"x": float("nan")}}], "metrics[0].values"),
        ([{"step": 0, "values": {"x": "high"}}], "metrics[0].values"),
        (["step"], "metrics[0].step"),
    ],
)
def test_bad_metrics_name_the_entry(snapshot, trainer, entries, where):
    job = jobs.job_register(user=trainer, name="run", snapshot_hash=snapshot.hash).job
    with pytest.raises(ValidationFailed) as caught:
        jobs.metrics_post(job=job, entries=entries)
    assert where in caught.value.details
    assert not job.metrics.exists()


def test_bad_rollouts_store_nothing(snapshot, trainer, curator):
    job = jobs.job_register(user=trainer, name="run", snapshot_hash=snapshot.hash).job
    digest = snapshot.members.first().content_hash
    with pytest.raises(ValidationFailed) as caught:
        jobs.rollouts_post(job=job, outcomes=[
            {"version_hash": digest, "sample_id": "ok", "passed": True},
            {"version_hash": "0" * 64, "sample_id": "x", "passed": True},
            {"version_hash": digest, "sample_id": "", "passed": "yes"}])  # fmt: skip
    assert set(caught.value.details) == {"rollouts[1].version_hash", "rollouts[2].sample_id", "rollouts[2].passed"}
    assert not Attempt.objects.exists()


def test_states_move_forward_only(snapshot, trainer):
    job = jobs.job_register(user=trainer, name="run", snapshot_hash=snapshot.hash).job
    jobs.job_set_state(job=job, state="running")
    jobs.job_set_state(job=job, state="finished")
    assert job.finished_at is not None
    with pytest.raises(InvalidTransition):
        jobs.job_set_state(job=job, state="running")


def test_only_the_job_or_its_registrant_posts_to_it(snapshot, trainer, curator, api_as):
    registered = jobs.job_register(user=trainer, name="run", snapshot_hash=snapshot.hash)
    url = reverse("api-job-metrics", args=[registered.job.pk])
    body = {"metrics": [{"step": 0, "values": {"loss": 1.0}}]}
    assert api_as(curator, ["read", "write"]).post(url, body, format="json").status_code == 403  # sees, cannot post
    assert api_as(trainer, ["read", "write"]).post(url, body, format="json").status_code == 200
    bad = api_as(trainer, ["read", "write"]).patch(reverse("api-job", args=[registered.job.pk]), {"state": "paused"},
                                                   format="json")  # fmt: skip
    assert bad.status_code == 409 and "state" in bad.json()["error"]["details"]
