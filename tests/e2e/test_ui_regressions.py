"""Regressions found while writing the browser journeys, held here with the test
client (fast, no browser): the journeys show them in Chromium as well."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.services import task_submit
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def test_the_verification_report_keeps_the_users_role_links_in_the_navigation(client, curator, reviewer):
    # The report passed the execution roles to its template as `roles`, the name under
    # which every page reads the user's roles: its navigation lost New task, Review
    # queue and the rest.
    make_task(owner=curator, slug="add-two")
    url = reverse("verification:report", args=["add-two", 1])
    client.force_login(reviewer)
    page = client.get(url).content.decode()
    assert f'href="{reverse("ui:review-queue")}"' in page
    client.force_login(curator)
    page = client.get(url).content.decode()
    assert f'href="{reverse("ui:task-create")}"' in page
    assert f'href="{reverse("ui:review-queue")}"' not in page


def test_a_report_opened_before_a_worker_starts_the_verification_polls_until_it_does(client, curator):
    # With no verification row yet the progress box did not poll: a report opened
    # between submitting and a worker planning the run (a moment, or as long as the
    # queue's backlog) said "not verified yet" and never changed.
    task = make_task(owner=curator, slug="add-two")
    progress_url = reverse("verification:progress", args=["add-two", 1])
    client.force_login(curator)
    draft = client.get(reverse("verification:report", args=["add-two", 1])).content.decode()
    assert "This version has not been verified yet." in draft and "hx-get" not in draft

    task_submit(actor=curator, task=task)
    page = client.get(reverse("verification:report", args=["add-two", 1])).content.decode()
    assert "waiting for a worker to start the verification" in page
    assert f'hx-get="{progress_url}"' in page
    fragment = client.get(progress_url)
    assert fragment.status_code == 200 and "HX-Refresh" not in fragment
    assert f'hx-get="{progress_url}"' in fragment.content.decode()
