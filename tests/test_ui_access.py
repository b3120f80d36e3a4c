"""Every UI page walked with every role and no one: no one is sent to log in, each role
gets 200 or 403 as the views' role checks say, nobody a 5xx. Every POST refuses a
request without a CSRF token. Sessions expire after SESSION_COOKIE_AGE; API tokens expire
and can be revoked, and are stored hashed. Every state change of a task is audited."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluation.models import AgentSession
from tasks_app.errors import DomainError
from tasks_app.models import ApiToken, State, Transition
from tasks_app.services import task_transition
from tasks_app.services.tokens import api_token_create, api_token_revoke
from tests.factories import PASSWORD, UserFactory, make_task
from tests.trainer_bridge.test_pools import _approved
from trainer_bridge.models import ExportBuild
from trainer_bridge.services.jobs import job_register
from trainer_bridge.services.pools import pool_create, snapshot_create

pytestmark = pytest.mark.django_db

ROLES = ("curator", "reviewer", "trainer", "admin", "nobody")
EVERYONE = frozenset(ROLES)
AUTHORS = frozenset({"curator", "admin"})  # has_role(CURATOR): admin holds every role
REVIEWERS = frozenset({"reviewer", "admin"})
VIEWERS = frozenset({"curator", "reviewer", "trainer", "admin"})  # difficulty, analytics, pools, jobs
# Task content (hidden tests, solutions, runs): the authoring roles, as in the API.
CONTENT = frozenset({"curator", "reviewer", "admin"})

# Who gets 200 for a GET of each page; everyone else signed in gets 403, except where
# REDIRECTED says otherwise.
GET_PAGES: dict[str, frozenset[str]] = {
    "ui:task-list": CONTENT,
    "ui:task-create": AUTHORS,
    "ui:solution-row": CONTENT,
    "ui:review-queue": REVIEWERS,
    "ui:task-detail": CONTENT,
    "ui:task-edit": AUTHORS,
    "ui:archive-create": AUTHORS,
    "ui:archive-version": AUTHORS,
    "ui:version-list": CONTENT,
    "ui:version-detail": CONTENT,
    "ui:version-diff": CONTENT,
    "verification:difficulty": VIEWERS,
    "verification:analytics": VIEWERS,
    "verification:analytics-download": VIEWERS,
    "verification:report": CONTENT,
    "verification:progress": CONTENT,
    "pools:list": VIEWERS,
    "pools:create": frozenset({"curator", "reviewer", "admin"}),
    "pools:detail": VIEWERS,
    "pools:build-progress": VIEWERS,  # the trainer's own job's snapshot
    "jobs:list": VIEWERS,
    "jobs:detail": VIEWERS,  # the trainer registered it
    "verification:session": VIEWERS,  # the trainer holds it; the others judge the task it is on
}
# The home page (the task list) sends a trainer to their jobs rather than refusing them.
REDIRECTED = {("ui:task-list", "trainer"): "/jobs/"}
# Endpoints that only take POST (forms and buttons); GET on them is 405.
POST_ONLY = {
    "ui:bulk",
    "ui:task-transition",
    "verification:bulk",
    "verification:difficulty-upload",
    "verification:difficulty-refit",
    "verification:difficulty-duplicates",
    "verification:rerun",
    "verification:mark-equivalent",
    "verification:proposal-accept",
    "verification:proposals-accept",
    "verification:proposal-dismiss",
    "verification:bulk-accept-proposed",
    "pools:preview",
    "pools:freeze",
    "pools:build",
}
# Pages that also take the POST of their own form.
POST_FORMS = {"ui:task-create", "ui:task-edit", "ui:archive-create", "ui:archive-version", "pools:create"}
NOT_UI = ("api/", "admin/", "accounts/", "static/", "livez", "healthz", "metrics", "__debug__")


def ui_routes() -> dict[str, str]:
    """Every named URL pattern of the UI: name -> route."""

    def walk(patterns: list[Any], prefix: str, namespace: str) -> Any:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), f"{namespace}{pattern.name}"

    return {name: route for route, name in walk(get_resolver().url_patterns, "", "") if not route.startswith(NOT_UI)}


@pytest.fixture
def users(curator: Any, reviewer: Any, trainer: Any, admin_user: Any) -> dict[str, Any]:
    return {"curator": curator, "reviewer": reviewer, "trainer": trainer, "admin": admin_user,
            "nobody": UserFactory(username="nobody", roles=[])}  # fmt: skip


@pytest.fixture
def world(users: dict[str, Any], settings: Any, tmp_path: Any) -> dict[str, Any]:
    settings.VAR_DIR = tmp_path / "var"
    task = _approved(users["curator"], users["reviewer"], "ui-task")
    pool = pool_create(slug="ui-pool", title="UI pool", criteria={})
    snapshot, _ = snapshot_create(pool=pool)
    job = job_register(user=users["trainer"], name="ui-job", snapshot_hash=snapshot.hash)
    build = ExportBuild.objects.create(id=uuid.uuid4(), snapshot=snapshot, format="jsonl",
                                       requested_by=users["trainer"])  # fmt: skip
    session = AgentSession.objects.create(
        id="a" * 32, version=task.latest_version, user=users["trainer"], environment="0" * 64,
        lease_expires_at=timezone.now(), state="closed",
    )  # fmt: skip
    return {"task": task, "pool": pool, "snapshot": snapshot, "job": job.job, "build": build, "session": session}


def _url(name: str, world: dict[str, Any]) -> str:
    slug, pool = world["task"].slug, world["pool"].slug
    args: dict[str, tuple[Any, ...]] = {
        "ui:task-detail": (slug,),
        "ui:task-edit": (slug,),
        "ui:archive-version": (slug,),
        "ui:task-transition": (slug,),
        "ui:version-list": (slug,),
        "ui:version-detail": (slug, 1),
        "ui:version-diff": (slug,),
        "verification:analytics-download": ("funnel", "csv"),
        "verification:report": (slug, 1),
        "verification:progress": (slug, 1),
        "verification:rerun": (slug, 1),
        "verification:mark-equivalent": (slug, "0" * 64),
        "verification:proposal-accept": (slug, 1, 1),
        "verification:proposals-accept": (slug, 1),
        "verification:proposal-dismiss": (slug, 1, 1),
        "pools:detail": (pool,),
        "pools:freeze": (pool,),
        "pools:build": (pool, world["snapshot"].hash),
        "pools:build-progress": (pool, world["build"].id),
        "jobs:detail": (world["job"].pk,),
        "verification:session": (world["session"].id,),
    }
    query = {"ui:solution-row": "?index=1"}
    return reverse(name, args=args.get(name, ())) + query.get(name, "")


def _signed_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_the_tables_name_every_ui_page_and_nothing_else():
    assert set(ui_routes()) == set(GET_PAGES) | POST_ONLY


def test_every_page_with_every_role_gets_200_or_403_as_its_role_check_says(world, users):
    from evaluation.difficulty import analytics

    assert "funnel" in analytics.CHARTS
    clients = {role: _signed_in(user) for role, user in users.items()}
    table: list[tuple[str, str, int]] = []
    wrong: list[str] = []
    for name, allowed in sorted(GET_PAGES.items()):
        url = _url(name, world)
        for role in ROLES:
            response = clients[role].get(url)
            status = response.status_code
            table.append((name, role, status))
            expected = 200 if role in allowed else 302 if (name, role) in REDIRECTED else 403
            if status != expected or (status == 302 and response["Location"] != REDIRECTED[(name, role)]):
                wrong.append(f"{name:34} {role:9} got {status}, expected {expected} ({url})")
    assert not wrong, "\n".join(wrong)
    assert all(status < 500 for _, _, status in table)


def test_anonymous_visitors_are_sent_to_log_in_from_every_page_and_endpoint(world):
    client = Client()
    login = reverse("login")
    for name in sorted(GET_PAGES):
        url = _url(name, world)
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(f"{login}?next="), (name, response)
    for name in sorted(POST_ONLY | POST_FORMS):
        response = client.post(_url(name, world), {})
        assert response.status_code == 302 and response["Location"].startswith(f"{login}?next="), (name, response)


def test_post_only_endpoints_refuse_a_get_and_nobody_gets_a_5xx_posting_nothing(world, users):
    for role in ROLES:
        client = _signed_in(users[role])
        for name in sorted(POST_ONLY):
            url = _url(name, world)
            assert client.get(url).status_code == 405, (role, name)
            status = client.post(url, {}).status_code
            assert status < 500, (role, name, status)


def test_every_post_without_a_csrf_token_is_refused_and_changes_nothing(world, users):
    client = _signed_in(users["admin"], enforce_csrf_checks=True)
    transitions = Transition.objects.count()
    for name in sorted(POST_ONLY | POST_FORMS):
        response = client.post(_url(name, world), {"to_state": State.RETIRED, "note": "csrf", "confirm": "1"})
        assert response.status_code == 403, (name, response.status_code)
        assert b"CSRF" in response.content, name
    assert Transition.objects.count() == transitions
    world["task"].refresh_from_db()
    assert world["task"].state == State.APPROVED


def test_a_post_with_its_csrf_token_goes_through(world, users):
    """The refusal above is the token's absence, not a page that refuses every POST."""
    client = _signed_in(users["curator"], enforce_csrf_checks=True)
    draft = make_task(owner=users["curator"], slug="csrf-draft")
    client.get(reverse("ui:task-detail", args=[draft.slug]))  # sets the CSRF cookie
    token = client.cookies[django_settings.CSRF_COOKIE_NAME].value
    response = client.post(reverse("ui:task-transition", args=[draft.slug]),
                           {"to_state": State.SUBMITTED, "csrfmiddlewaretoken": token})  # fmt: skip
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.state == State.SUBMITTED


# -- sessions and tokens -------------------------------------------------------------------------


def test_a_session_lasts_session_cookie_age_and_no_longer_authenticates_after_it(users):
    age = django_settings.SESSION_COOKIE_AGE
    assert 0 < age <= 14 * 24 * 3600
    client = Client()
    assert client.login(username=users["curator"].username, password=PASSWORD)
    session = Session.objects.get(session_key=client.session.session_key)
    assert abs((session.expire_date - timezone.now()) - timedelta(seconds=age)) < timedelta(minutes=1)
    assert client.get(reverse("ui:task-list")).status_code == 200
    # The session's age passes: its expiry date is now in the past.
    Session.objects.filter(pk=session.pk).update(expire_date=session.expire_date - timedelta(seconds=age + 1))
    response = client.get(reverse("ui:task-list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def _me(secret: str) -> Any:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client.get("/api/v1/me/")


def test_an_expired_token_no_longer_authenticates(users):
    issued = api_token_create(user=users["trainer"], name="short", scopes=["read"],
                              expires_at=timezone.now() + timedelta(minutes=5))  # fmt: skip
    assert _me(issued.secret).status_code == 200
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _me(issued.secret)
    error = response.json()["error"]
    assert response.status_code == 401
    assert error["code"] == "authentication_failed" and "expired" in error["message"]


def test_a_revoked_token_no_longer_authenticates_whether_revoked_by_the_api_or_the_service(users):
    issued = api_token_create(user=users["curator"], name="cli", scopes=["read", "write"])
    other = api_token_create(user=users["curator"], name="other", scopes=["read"])
    assert _me(issued.secret).status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert client.delete(f"/api/v1/tokens/{other.token.pk}/").status_code in (200, 204)
    assert _me(other.secret).status_code == 401
    api_token_revoke(token=issued.token)
    response = _me(issued.secret)
    assert response.status_code == 401 and response.json()["error"]["code"] == "authentication_failed"


def test_tokens_are_stored_as_a_hash_and_no_column_holds_the_secret(users):
    issued = api_token_create(user=users["curator"], name="stored", scopes=["read"])
    row = ApiToken.objects.filter(pk=issued.token.pk).values().get()
    assert row["key_hash"] == hashlib.sha256(issued.secret.encode()).hexdigest()
    for column, value in row.items():
        assert issued.secret not in str(value), column
    assert len(row["prefix"]) < len(issued.secret) // 4  # enough to recognise a token, not to use it


# -- the audit trail -----------------------------------------------------------------------------


def test_every_state_change_of_a_task_writes_an_audit_entry_with_who_from_to_and_why(users):
    curator, reviewer = users["curator"], users["reviewer"]
    steps = [
        ("reject-path", curator, State.SUBMITTED),  # submit
        ("reject-path", curator, State.DRAFT),  # withdraw
        ("reject-path", curator, State.SUBMITTED),
        ("reject-path", None, State.FLAGGED),  # the pipeline's verdict
        ("reject-path", reviewer, State.DRAFT),  # request changes
        ("reject-path", curator, State.SUBMITTED),
        ("reject-path", None, State.VERIFIED),
        ("reject-path", reviewer, State.REJECTED),
        ("reject-path", curator, State.RETIRED),
        ("reject-path", curator, State.DRAFT),  # restore
        ("approve-path", curator, State.SUBMITTED),
        ("approve-path", None, State.VERIFIED),
        ("approve-path", reviewer, State.APPROVED),
        ("approve-path", curator, State.RETIRED),
    ]
    tasks = {slug: make_task(owner=curator, slug=slug) for slug in ("reject-path", "approve-path")}
    for slug, actor, to_state in steps:
        task = tasks[slug]
        task.refresh_from_db()
        from_state = task.state
        before = Transition.objects.filter(task=task).count()
        task_transition(actor=actor, task=task, to_state=to_state, note=f"to {to_state}")
        entries = Transition.objects.filter(task=task)
        assert entries.count() == before + 1, (slug, from_state, to_state)
        entry = entries.order_by("-id").first()
        assert (entry.from_state, entry.to_state, entry.actor, entry.note) == (
            from_state, to_state, actor, f"to {to_state}"
        )  # fmt: skip
        assert entry.version_id == Transition.objects.get(pk=entry.pk).task.latest_version_id


def test_a_refused_state_change_writes_no_audit_entry(users):
    task = make_task(owner=users["curator"], slug="refused")
    before = Transition.objects.count()
    with pytest.raises(DomainError):  # four eyes, or the state: either way nothing may be written
        task_transition(actor=users["curator"], task=task, to_state=State.APPROVED, note="self-approval")
    assert Transition.objects.count() == before
