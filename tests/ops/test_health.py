"""/healthz and /livez against the real PostgreSQL test database and a real Redis."""

from __future__ import annotations

import json

import pytest

from evaluation.sandbox.pool_reports import PoolReporter
from tests.evaluation.conftest import needs_bwrap

pytestmark = pytest.mark.django_db


def _health(client, **extra) -> tuple[int, dict]:
    response = client.get("/healthz", **extra)
    assert response["Content-Type"] == "application/json"
    return response.status_code, json.loads(response.content)


@needs_bwrap
def test_health_is_200_when_the_database_the_broker_and_a_sandbox_worker_are_ok(client, redis_broker):
    reporter = PoolReporter(redis_broker, "w1@host-a")
    reporter.publish()  # what a sandbox worker's reporter thread sends every SANDBOX_POOL_REPORT_S
    try:
        status, body = _health(client)
    finally:
        reporter.stop()
    assert status == 200, body
    assert body["status"] == "ok" and body["failing"] == []
    checks = body["checks"]
    assert set(checks) == {"database", "broker", "sandbox"}
    assert all(check["ok"] for check in checks.values()), checks
    assert all(isinstance(check["ms"], float | int) and check["ms"] >= 0 for check in checks.values())
    assert checks["database"]["required"] and checks["broker"]["required"]
    assert checks["broker"]["kind"] == "redis"
    assert checks["sandbox"]["workers"] == 1 and checks["sandbox"]["backends"].get("bwrap") == 1


def test_health_is_503_naming_the_broker_when_its_port_is_closed(client, settings, closed_port):
    settings.CELERY_BROKER_URL = f"redis://:hunter2-secret@127.0.0.1:{closed_port}/7"
    response = client.get("/healthz")
    body = json.loads(response.content)
    assert response.status_code == 503
    assert body["status"] == "fail" and body["failing"] == ["broker"]
    assert body["checks"]["database"]["ok"] is True
    broker = body["checks"]["broker"]
    assert broker["ok"] is False and "refused" in broker["reason"]
    # Nothing of the connection string reaches an unauthenticated caller.
    text = response.content.decode()
    assert "hunter2" not in text and str(closed_port) not in text and "127.0.0.1" not in text


def test_a_sandbox_worker_that_cannot_start_sandboxes_is_named_and_fails_health_when_required(
    client, settings, redis_broker, monkeypatch
):
    monkeypatch.setenv("SANDBOX_BACKEND", "bwrap")
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")
    reporter = PoolReporter(redis_broker, "w2@host-b")
    reporter.publish()
    try:
        status, body = _health(client)
        assert status == 200, body  # not required by default: reported, not failing
        sandbox = body["checks"]["sandbox"]
        assert sandbox["ok"] is False and sandbox["required"] is False
        assert "w2@host-b" in sandbox["reason"]

        settings.HEALTH_REQUIRED_CHECKS = ["database", "broker", "sandbox"]
        status, body = _health(client)
    finally:
        reporter.stop()
    assert status == 503 and body["failing"] == ["sandbox"]


def test_without_worker_reports_the_sandbox_check_says_so(client, redis_broker):
    status, body = _health(client)
    assert status == 200
    assert body["checks"]["sandbox"]["ok"] is False
    assert body["checks"]["sandbox"]["reason"] == "no sandbox worker has reported recently"


def test_embedded_mode_checks_the_filesystem_broker_and_the_local_backend(client, settings):
    assert str(settings.CELERY_BROKER_URL).startswith("filesystem://")  # the test run's own settings
    status, body = _health(client)
    assert status == 200, body
    assert body["checks"]["broker"] == {**body["checks"]["broker"], "ok": True, "kind": "filesystem"}
    assert body["checks"]["sandbox"]["source"] == "local"


def test_health_answers_any_host_over_plain_http_while_other_pages_do_not(client, settings):
    """A load balancer calls by address and over HTTP: neither the host check nor the
    production HTTPS redirect may stand in its way."""
    settings.ALLOWED_HOSTS = ["tasks.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz", HTTP_HOST="10.0.3.7:8000").status_code == 200
    assert client.get("/livez", HTTP_HOST="10.0.3.7:8000").status_code == 200
    assert client.get("/accounts/login/", HTTP_HOST="10.0.3.7:8000").status_code == 400
    assert client.get("/accounts/login/", HTTP_HOST="tasks.example.org").status_code == 301


def test_livez_needs_nothing_but_the_process(client, settings, closed_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/7"
    response = client.get("/livez")
    assert response.status_code == 200 and json.loads(response.content) == {"status": "ok"}


# -- the embedded defaults (make run): the web probes its own backend, and must -----------------


@pytest.fixture
def fresh_probe():
    """Each test probes afresh: the probe's answers are cached per process."""
    from evaluation.sandbox import probe

    probe._cache.clear()
    yield
    probe._cache.clear()


def test_embedded_health_is_503_with_the_reason_when_bwrap_is_missing(client, monkeypatch, tmp_path, fresh_probe):
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without bubblewrap, as the platform finds it
    status, body = _health(client)
    assert status == 503, body
    assert body["failing"] == ["sandbox"]
    sandbox = body["checks"]["sandbox"]
    assert sandbox["required"] is True and sandbox["source"] == "local" and sandbox["backend"] == "bwrap"
    assert sandbox["ok"] is False and sandbox["reason"] == "bubblewrap (bwrap) is not installed"


def test_embedded_health_is_503_when_bwrap_is_present_but_no_sandbox_starts(client, monkeypatch, fresh_probe):
    # An executable that is no interpreter: every package check passes, the sandbox never greets.
    monkeypatch.setenv("SANDBOX_PYTHON", "/usr/bin/true")
    status, body = _health(client)
    assert status == 503, body
    assert body["failing"] == ["sandbox"]
    assert body["checks"]["sandbox"]["reason"].startswith("a bwrap sandbox does not start: "), body


def test_embedded_health_is_200_when_a_real_sandbox_runs_a_solution(client, fresh_probe):
    status, body = _health(client)
    assert status == 200, body
    sandbox = body["checks"]["sandbox"]
    assert sandbox == {**sandbox, "ok": True, "required": True, "source": "local", "backend": "bwrap"}


def test_required_checks_can_still_be_set_from_the_environment(client, settings, monkeypatch, tmp_path, fresh_probe):
    settings.HEALTH_REQUIRED_CHECKS = ["database", "broker"]
    monkeypatch.setenv("PATH", str(tmp_path))
    status, body = _health(client)
    assert status == 200 and body["checks"]["sandbox"]["ok"] is False and body["checks"]["sandbox"]["required"] is False


def test_a_worker_whose_bwrap_is_present_but_starts_no_sandbox_reports_it(
    client, settings, redis_broker, monkeypatch, fresh_probe
):
    """Production: the workers' reports carry the same real probe, not only a PATH lookup."""
    monkeypatch.setenv("SANDBOX_BACKEND", "bwrap")
    monkeypatch.setenv("SANDBOX_PYTHON", "/usr/bin/true")  # present and executable, but no interpreter
    reporter = PoolReporter(redis_broker, "w3@host-c")
    reporter.publish()
    try:
        status, body = _health(client)
    finally:
        reporter.stop()
    assert status == 200, body  # with Redis the sandbox check is reported, not required, by default
    sandbox = body["checks"]["sandbox"]
    assert sandbox["ok"] is False and sandbox["required"] is False
    assert sandbox["reason"].startswith("w3@host-c (bwrap): a bwrap sandbox does not start"), sandbox
