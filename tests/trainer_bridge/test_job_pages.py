"""A training job's page shows its progress and its curves; trainers see their own
jobs, curators every job."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import UserFactory
from trainer_bridge.services import jobs
from trainer_bridge.services.pools import pool_create, snapshot_create

from .test_pools import _approved

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(curator, reviewer, trainer):
    _approved(curator, reviewer, "paged")
    snapshot = snapshot_create(pool=pool_create(slug="paged", title="Paged", criteria={}))[0]
    job = jobs.job_register(user=trainer, name="grpo-page", snapshot_hash=snapshot.hash, steps_total=4).job
    values = [{"reward_mean": s / 4, "loss": 1 - s / 4, "tokens_per_s": 90.0} for s in range(2)]
    jobs.metrics_post(job=job, entries=[{"step": s, "values": v} for s, v in enumerate(values)])
    return job


def test_the_job_page_shows_progress_and_curves(client, trainer, job, django_assert_max_num_queries):
    client.force_login(trainer)
    with django_assert_max_num_queries(12):
        page = client.get(reverse("jobs:detail", args=[job.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "grpo-page" in html and "2 of 4" in html and 'value="50"' in html
    assert html.count("<svg") == 3  # reward, loss, and tokens_per_s on a chart of its own
    assert "reward_mean at step 1: 0.25" in html
    listing = client.get(reverse("jobs:list")).content.decode()
    assert "grpo-page" in listing and "running" in listing


def test_who_sees_which_job(client, curator, job):
    client.force_login(curator)
    assert client.get(reverse("jobs:detail", args=[job.pk])).status_code == 200
    client.force_login(UserFactory(username="tina", roles=["trainer"]))
    assert client.get(reverse("jobs:detail", args=[job.pk])).status_code == 404
    assert "grpo-page" not in client.get(reverse("jobs:list")).content.decode()
    client.force_login(UserFactory(username="nora", roles=[]))
    assert client.get(reverse("jobs:list")).status_code == 403
