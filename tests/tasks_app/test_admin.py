from __future__ import annotations

import pytest
from django.test import Client

from tasks_app.models import TaskVersion
from tests.factories import PASSWORD, content_data, make_task

pytestmark = pytest.mark.django_db

MODELS = ("task", "taskversion", "solution", "transition", "tag", "apitoken")


@pytest.fixture
def staff_client(admin_user, curator):
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    make_task(owner=curator)
    client = Client()
    assert client.login(username=admin_user.username, password=PASSWORD)
    return client


@pytest.mark.parametrize("model", MODELS)
def test_every_model_has_an_admin_list_with_search(staff_client, model):
    response = staff_client.get(f"/admin/tasks_app/{model}/?q=add")
    assert response.status_code == 200


def test_the_admin_shows_a_version_but_cannot_change_it(staff_client):
    version = TaskVersion.objects.get()
    page = staff_client.get(f"/admin/tasks_app/taskversion/{version.pk}/change/")
    assert page.status_code == 200 and b"Return the sum" in page.content
    staff_client.post(f"/admin/tasks_app/taskversion/{version.pk}/change/", {**content_data(), "statement": "x"})
    version.refresh_from_db()
    assert version.statement == "Return the sum of `a` and `b`."


def test_admin_review_actions_ask_for_the_note_and_keep_the_review_rules(staff_client, admin_user, curator):
    from tasks_app.models import State, Task
    from tests.tasks_app.ui.conftest import in_review

    flagged = in_review(owner=curator, slug="flagged-one", state=State.FLAGGED)
    url = "/admin/tasks_app/task/"
    asked = staff_client.post(url, {"action": "approve", "_selected_action": [flagged.pk]})
    assert asked.status_code == 200 and b"Waiver note" in asked.content
    staff_client.post(url, {"action": "approve", "_selected_action": [flagged.pk], "apply": "1", "note": ""})
    assert Task.objects.get(pk=flagged.pk).state == State.FLAGGED  # no waiver, no approval
    staff_client.post(url, {"action": "approve", "_selected_action": [flagged.pk], "apply": "1", "note": "Fine."})
    assert Task.objects.get(pk=flagged.pk).state == State.APPROVED
    other = in_review(owner=curator, slug="other-one", state=State.FLAGGED)
    staff_client.post(url, {"action": "request_changes", "_selected_action": [other.pk], "apply": "1", "note": "More"})
    assert Task.objects.get(pk=other.pk).state == State.DRAFT
    assert Task.objects.get(pk=other.pk).transitions.first().actor == admin_user
