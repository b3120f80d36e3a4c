"""Schemathesis over the API's own OpenAPI schema, in process against the WSGI app, as
each kind of caller: no one, a curator, a reviewer, a trainer and an admin (each with a
token of every scope), and a training job's token. Whatever the input: no 5xx, every
4xx has the one error shape, and responses conform to the schema where it says what
they hold.

Every operation gets a few generated requests with random path parameters (mostly
404s) and a few with the path parameters of objects that exist, so the bodies and
queries reach the views. The reward endpoints wait at most a few milliseconds for
verdicts: no sandbox worker runs here."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from schemathesis.checks import not_a_server_error, response_schema_conformance
from schemathesis.core.failures import FailureGroup

from tasks_app.services.tokens import SCOPES
from tests.api_world import api_world
from tests.conftest import token_client
from tests.fuzz.conftest import fuzz_settings

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "curator", "reviewer", "trainer", "admin", "job")
EXAMPLES_PER_OPERATION = 2


@pytest.fixture
def fast_rewards(settings: Any, tmp_path: Any) -> None:
    settings.REWARD = {**settings.REWARD, "DEADLINE_S": 0.02, "MAX_DEADLINE_S": 0.05}
    settings.VAR_DIR = tmp_path / "var"  # export builds and uploads land in the test's own folder
    settings.DEBUG_PROPAGATE_EXCEPTIONS = False  # a view's exception is a 500 here, which the check reports


@pytest.fixture
def wsgi_in_test_transaction() -> Any:
    """The WSGI handler closes "old" database connections at each request's start and
    end, which would close the test's own transaction; Django's test Client keeps it
    open the same way, by leaving those two signal handlers out while it calls."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def world(curator: Any, reviewer: Any, trainer: Any, admin_user: Any) -> dict[str, Any]:
    return {**api_world(curator, reviewer, trainer, prefix="fuzz"),
            "users": {"curator": curator, "reviewer": reviewer, "trainer": trainer, "admin": admin_user}}  # fmt: skip


def _known_path_parameters(operation: Any, world: dict[str, Any]) -> dict[str, Any]:
    values = {
        "slug": world["pool"].slug if operation.path.startswith("/api/v1/pools/") else world["task"].slug,
        "number": 1,
        "digest": world["snapshot"].hash,
        "batch_id": str(world["batch"].id),
        "job_id": world["job"].job.pk,
        "upload_id": 1,
        "build_id": "00000000-0000-0000-0000-000000000000",
    }
    names = {p.name for p in operation.path_parameters}
    return {name: values[name] for name in names if name in values}


def _authorization(role: str, world: dict[str, Any]) -> dict[str, str]:
    if role == "anonymous":
        return {}
    if role == "job":
        return {"Authorization": f"Bearer {world['job'].secret}"}
    # A fresh token for each operation: DELETE /tokens/{id} may revoke the one before.
    client = token_client(world["users"][role], list(SCOPES))
    return {"Authorization": client._credentials["HTTP_AUTHORIZATION"]}


def _error_shape_problem(response: Any) -> str | None:
    """Why a 4xx body is not {"error": {"code", "message", "details"}}, or None."""
    if not 400 <= response.status_code < 500:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return f"a {response.status_code} that is not JSON: {response.content[:120]!r}"
    if not (isinstance(body, dict) and set(body) == {"error"} and isinstance(body["error"], dict)):
        return f"a {response.status_code} without the error shape: {str(body)[:200]}"
    error = body["error"]
    if not {"code", "message", "details"} <= set(error):
        return f"a {response.status_code} error lacking code/message/details: {str(body)[:200]}"
    if not (isinstance(error["code"], str) and isinstance(error["message"], str) and error["message"]):
        return f"a {response.status_code} error with a code or message that is not text: {str(body)[:200]}"
    return None


def _fuzz_operation(strategy: Any, headers: dict[str, str], problems: dict[str, str]) -> None:
    """Call the operation with a few generated cases; each kind of problem is kept once,
    with the first request that showed it."""
    calls: list[tuple[Any, Any]] = []

    @fuzz_settings(
        max_examples=EXAMPLES_PER_OPERATION,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: every problem is collected, none retried
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        calls.append((case, case.call(headers=headers)))

    run()
    # Checked outside Hypothesis's run, which would otherwise stop at the first problem.
    for case, response in calls:
        label = f"{case.operation.label} -> {response.status_code}"
        where = f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:150]}"
        try:
            case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
        except FailureGroup as group:  # schemathesis raises its failures as one group; each is kept
            for failure in group.exceptions:
                first = str(failure).strip().splitlines()[0][:200]
                problems.setdefault(f"{label}: {type(failure).__name__}", f"{first}\n      e.g. {where}")
        shape = _error_shape_problem(response)
        if shape:
            problems.setdefault(f"{label}: error shape", f"{shape}\n      e.g. {where}")


@pytest.mark.parametrize("role", ROLES)
def test_the_api_answers_fuzzed_requests_without_5xx_and_with_the_one_error_shape(
    role: str, world: dict[str, Any], fast_rewards: None, wsgi_in_test_transaction: None
) -> None:
    from config.wsgi import application

    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
    problems: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        known = _known_path_parameters(operation, world)
        strategies = [operation.as_strategy()]
        if known:
            strategies.append(operation.as_strategy(path_parameters=known))
        for strategy in strategies:
            _fuzz_operation(strategy, _authorization(role, world), problems)
    listed = "\n".join(f"  {key}: {text}" for key, text in sorted(problems.items()))
    assert not problems, f"{len(problems)} kind(s) of problem as {role}:\n{listed}"


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/pools/", "/api/v1/pools/{slug}/snapshots/"])
def test_the_schema_says_the_list_endpoints_answer_an_array(path: str, client: Any) -> None:
    """Regression: these three answered a JSON array while the schema promised an object,
    so every client generated from the schema failed to read them."""
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    answer = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"type": "array", "items": {"type": "object", "additionalProperties": {}}}
