from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tasks_app.models import ApiToken
from tasks_app.services import api_token_create, api_token_revoke
from tests.factories import PASSWORD, content_data, make_task

pytestmark = pytest.mark.django_db


def test_an_anonymous_call_is_a_401(db):
    response = APIClient().get("/api/v1/tasks/")
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"


def test_a_bad_token_is_a_401(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer tp_not-a-real-token")
    assert client.get("/api/v1/tasks/").json()["error"]["code"] == "authentication_failed"


def test_a_read_token_cannot_write(curator, api_as):
    response = api_as(curator, ["read"]).post(
        "/api/v1/tasks/", {"slug": "x", "title": "X", "version": content_data()}, format="json"
    )
    assert response.status_code == 403
    assert "'write' scope" in response.json()["error"]["message"]


def test_a_write_token_cannot_export(curator, api_as):
    make_task(owner=curator)
    response = api_as(curator, ["read", "write"]).get("/api/v1/export/")
    assert response.status_code == 403 and "'export' scope" in response.json()["error"]["message"]


def test_a_revoked_or_expired_token_is_refused(curator):
    issued = api_token_create(user=curator, name="t", scopes=["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert client.get("/api/v1/me/").status_code == 200
    api_token_revoke(token=issued.token)
    assert client.get("/api/v1/me/").status_code == 401
    expired = api_token_create(user=curator, name="old", scopes=["read"], expires_at=timezone.now() - timedelta(1))
    client.credentials(HTTP_AUTHORIZATION=f"Token {expired.secret}")
    assert client.get("/api/v1/me/").json()["error"]["message"] == "The token has expired."


def test_only_the_hash_of_a_token_is_stored(curator):
    issued = api_token_create(user=curator, name="t", scopes=["read"])
    stored = ApiToken.objects.get()
    assert issued.secret not in (stored.key_hash, stored.prefix) and len(stored.key_hash) == 64


def test_a_trainer_cannot_read_task_content(trainer, api_as):
    assert api_as(trainer, ["read", "export"]).get("/api/v1/tasks/").status_code == 403


def test_a_session_user_creates_a_token_and_sees_the_secret_once(curator):
    client = APIClient()
    assert client.login(username="cora", password=PASSWORD)
    created = client.post("/api/v1/tokens/", {"name": "ci", "scopes": ["read", "write"]}, format="json")
    assert created.status_code == 201 and created.json()["token"].startswith("tp_")
    listed = client.get("/api/v1/tokens/").json()
    assert "token" not in listed[0] and listed[0]["scopes"] == ["read", "write"]
    assert client.delete(f"/api/v1/tokens/{listed[0]['id']}/").status_code == 204
    assert ApiToken.objects.get().revoked_at is not None


def test_a_token_cannot_mint_a_token_with_more_scopes(curator, api_as):
    response = api_as(curator, ["read", "write"]).post(
        "/api/v1/tokens/", {"name": "escalate", "scopes": ["review"]}, format="json"
    )
    assert response.status_code == 403
    assert ApiToken.objects.count() == 1


def test_an_unknown_scope_is_a_400(curator, api_as):
    response = api_as(curator, ["read", "write"]).post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["admin"]}, format="json"
    )
    assert response.status_code == 400 and "scopes[0]" in response.json()["error"]["details"]


def test_the_token_lookup_loads_what_the_orm_loads(curator):
    """One written-out statement replaces the ORM's two (token with user, then roles):
    the same token, the same user, and exactly the user's platform roles, whatever
    other groups they are in; a superuser holds every role."""
    from django.contrib.auth.models import Group

    from tasks_app.raw_rows import token_with_user
    from tasks_app.roles import ROLES, ensure_role_groups
    from tasks_app.services.tokens import hash_secret

    ensure_role_groups()
    curator.groups.add(Group.objects.get(name="reviewer"), Group.objects.create(name="not-a-role"))
    issued = api_token_create(user=curator, name="t", scopes=["read", "reward"],
                              expires_at=timezone.now() + timedelta(days=1))  # fmt: skip
    found = token_with_user(hash_secret(issued.secret))
    stored = ApiToken.objects.select_related("user").get(pk=issued.token.pk)
    for field in ApiToken._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(stored, field.attname), field.name
    for field in type(curator)._meta.concrete_fields:
        assert getattr(found.user, field.attname) == getattr(stored.user, field.attname), field.name
    assert found.scopes == ["read", "reward"] and found.user.pk == curator.pk
    assert found.user._platform_roles == {"curator", "reviewer"}
    assert token_with_user(hash_secret("tp_nothing")) is None

    curator.groups.clear()
    assert token_with_user(hash_secret(issued.secret)).user._platform_roles == frozenset()
    curator.is_superuser = True
    curator.save()
    assert token_with_user(hash_secret(issued.secret)).user._platform_roles == frozenset(ROLES)
