"""Every API endpoint, walked with every role, a training job's token and no one:
nobody gets a 5xx, every refusal has the one error shape, an anonymous caller is
always 401, a job's token reaches only its own job, snapshot and batches, and
every endpoint is throttled."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tasks_app.api.throttles import PlatformThrottle
from tasks_app.services.tokens import SCOPES
from tests.api_world import api_world
from tests.conftest import token_client
from tests.factories import UserFactory
from trainer_bridge.services.jobs import job_register
from trainer_bridge.services.pools import pool_create, snapshot_create

from .trainer_bridge.test_pools import _approved

pytestmark = pytest.mark.django_db
PUBLIC = {"api-schema", "api-docs", "api-redoc"}  # the API's own documentation
OWN_ACCOUNT = {"api-me", "api-token-list", "api-token-detail"}  # anyone signed in: their own account


def api_routes() -> list[tuple[str, URLPattern]]:
    def walk(patterns: list[Any], prefix: str) -> Any:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    return [(route, p) for route, p in walk(get_resolver().url_patterns, "") if route.startswith("api/")]


@pytest.fixture
def world(curator, reviewer, trainer, admin_user) -> dict[str, Any]:
    other_pool = pool_create(slug="other", title="Other", criteria={"tags_include": ["nothing-has-this"]})
    return {**api_world(curator, reviewer, trainer, prefix="walk"), "other_pool": other_pool}


def _url(route: str, world: dict[str, Any]) -> str:
    values = {
        "<slug:slug>": world["task"].slug,
        "<int:number>": "1",
        "<int:token_id>": "1",
        "<int:upload_id>": "1",
        "<str:digest>": world["snapshot"].hash,
        "<str:batch_id>": str(world["batch"].id),
        "<int:job_id>": str(world["job"].job.pk),
        "<str:build_id>": "00000000-0000-0000-0000-000000000000",
        "<path:path>": "README.md",
        "<str:session_id>": "0" * 32,
        "<str:content_hash>": world["task"].latest_version.content_hash,
    }
    url = "/" + route
    if url.startswith("/api/v1/pools/<slug:slug>"):
        url = url.replace("<slug:slug>", world["pool"].slug)
    for placeholder, value in values.items():
        url = url.replace(placeholder, value)
    assert "<" not in url, url
    return url


def _clients(world: dict[str, Any], curator, reviewer, trainer, admin_user) -> dict[str, APIClient]:
    every = list(SCOPES)
    job_client = APIClient()
    job_client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['job'].secret}")
    return {
        "anonymous": APIClient(),
        "curator": token_client(curator, every),
        "reviewer": token_client(reviewer, every),
        "trainer": token_client(trainer, every),
        "admin": token_client(admin_user, every),
        "no-role": token_client(UserFactory(username="nobody", roles=[]), every),
        "job": job_client,
    }


# What a job's token may reach (with GET unless said): everything else is a 4xx.
JOB_ALLOWED = {
    ("GET", "api-pools"),
    ("GET", "api-snapshots"),
    ("GET", "api-snapshot-export"),
    ("GET", "api-reward-batch"),
    ("GET", "api-jobs"),
    ("GET", "api-job"),
    ("POST", "api-snapshot-builds"),  # its own snapshot, built in the background
}


def test_every_endpoint_with_every_role(world, curator, reviewer, trainer, admin_user):
    clients = _clients(world, curator, reviewer, trainer, admin_user)
    seen = []
    for route, pattern in api_routes():
        view = getattr(pattern.callback, "view_class", None) or pattern.callback.cls
        url = _url(route, world)
        for method in ("get", "post"):
            if not hasattr(view, method):
                continue
            for who, client in clients.items():
                body = {} if method == "post" else None
                response = getattr(client, method)(url, body, format="json") if body is not None else client.get(url)
                status = response.status_code
                seen.append((who, method, pattern.name, status))
                assert status < 500, (who, method, url, status, getattr(response, "content", b"")[:300])
                if pattern.name in PUBLIC:
                    continue
                if status >= 400 and response.get("Content-Type", "").startswith("application/json"):
                    assert set(response.json()) == {"error"}, (who, method, url, response.json())
                    assert {"code", "message", "details"} <= set(response.json()["error"])
                if who == "anonymous":
                    assert status == 401, (method, url, status)
                if who == "no-role" and pattern.name not in OWN_ACCOUNT:
                    assert status in (403, 404, 405), (method, url, status)
                if who == "job" and (method.upper(), pattern.name) not in JOB_ALLOWED:
                    if not (
                        method == "post"
                        and pattern.name in ("api-rewards", "api-job-metrics", "api-job-rollouts", "api-sessions")
                    ):
                        assert status in (403, 404, 405), (method, url, status)
                    else:
                        assert status == 400, (method, url, status)  # allowed, but {} is no body
    assert len(seen) > 300


def test_a_job_token_reads_its_own_snapshot_and_batches_only(world, curator, reviewer, trainer, admin_user):
    clients = _clients(world, curator, reviewer, trainer, admin_user)
    job = clients["job"]
    snapshot = world["snapshot"]
    own = f"/api/v1/pools/walk-pool/snapshots/{snapshot.hash}/export"
    assert job.get(own).status_code == 200
    assert [p["slug"] for p in job.get("/api/v1/pools/").json()] == ["walk-pool"]
    assert job.get(f"/api/v1/rewards/{world['batch'].id}").status_code == 202  # still waiting for a worker
    # Another user's batch is not found, even by id.
    assert clients["curator"].get(f"/api/v1/rewards/{world['batch'].id}").status_code == 404
    # A second job on another snapshot: neither token reads the other's.
    _approved(curator, reviewer, "walk-other", tags=("nothing-has-this",), statement="Other.")
    other_snapshot, _ = snapshot_create(pool=world["other_pool"])
    other_job = job_register(user=trainer, name="other", snapshot_hash=other_snapshot.hash)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {other_job.secret}")
    assert other.get(own).status_code == 404
    assert job.get(f"/api/v1/pools/other/snapshots/{other_snapshot.hash}/export").status_code == 404
    assert other.get(f"/api/v1/jobs/{world['job'].job.pk}").status_code == 404
    assert other.post(f"/api/v1/jobs/{world['job'].job.pk}/metrics", {"metrics": []}, format="json").status_code == 404
    # A trainer reads snapshots of their own jobs; a curator every snapshot.
    assert clients["trainer"].get(own).status_code == 200
    stranger = token_client(UserFactory(username="tess", roles=["trainer"]), ["read", "export"])
    assert stranger.get(own).status_code == 404
    assert clients["curator"].get(own).status_code == 200


def test_tokens_are_stored_hashed(world):
    from tasks_app.models import ApiToken

    token = world["job"].job.token
    assert world["job"].secret not in {token.key_hash, token.prefix} and len(token.key_hash) == 64
    assert not ApiToken.objects.filter(key_hash=world["job"].secret).exists()


def test_every_endpoint_is_throttled_and_a_throttled_call_says_when_to_return(world, trainer, settings):
    for route, pattern in api_routes():
        view = getattr(pattern.callback, "view_class", None) or pattern.callback.cls
        classes = getattr(view, "throttle_classes", None)
        assert classes and any(issubclass(c, PlatformThrottle) for c in classes), route
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
                                                          "jobs": "2/min"}}  # fmt: skip
    client = token_client(trainer, ["read"])
    statuses = [client.get("/api/v1/jobs").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    throttled = client.get("/api/v1/jobs")
    assert throttled.json()["error"]["code"] == "throttled" and int(throttled["Retry-After"]) >= 1
    # Counted per token: another token of the same user has its own count.
    assert token_client(trainer, ["read"]).get("/api/v1/jobs").status_code == 200
