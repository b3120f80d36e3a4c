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
