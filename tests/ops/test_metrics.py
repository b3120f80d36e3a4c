"""/metrics: the text parses, and each figure matches what the test put in the real
database or the real Redis broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.models import Execution, Verification
from evaluation.sandbox import engine
from evaluation.sandbox.pool_reports import PoolReporter
from tests.factories import make_task

from .conftest import family_names, parse_metrics, sample

pytestmark = pytest.mark.django_db
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def _scrape(client, **extra) -> dict:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse_metrics(response.content.decode())


def test_a_request_is_counted_by_method_route_and_status_class(client):
    before = _scrape(client)
    name = "platform_http_requests_total"
    counted = sample(before, name, method="GET", route="api-me", status="4xx") or 0.0
    assert client.get("/api/v1/me/").status_code == 401
    after = _scrape(client)
    assert sample(after, name, method="GET", route="api-me", status="4xx") == counted + 1
    latency = sample(after, "platform_http_request_duration_seconds_count", method="GET", route="api-me")
    assert latency is not None and latency >= 1
    # The first scrape was counted too, under its own route.
    assert (sample(after, name, method="GET", route="metrics", status="2xx") or 0) >= 1
    client.get("/no/such/page/")
    assert (sample(_scrape(client), name, method="GET", route="unmatched", status="4xx") or 0) >= 1


def _verification(version, backend: str | None) -> Verification:
    config = {"repeats": 2} if backend is None else {"backend": backend, "repeats": 2}
    return Verification.objects.create(version=version, config_hash=f"cfg-{backend}", config=config)


def _executions(verification: Verification, status: str, count: int) -> None:
    for n in range(count):
        Execution.objects.create(
            verification=verification, key=f"{status}-{n}", role="reference", subject="ref", code="pass",
            solution_digest="0" * 64, repeat=n, status=status,
        )  # fmt: skip


def test_executions_are_counted_by_status_and_backend_from_the_database(client, curator):
    version = make_task(owner=curator, slug="counted").latest_version
    on_bwrap, on_docker, unnamed = _verification(version, "bwrap"), _verification(version, "docker"), None
    unnamed = _verification(version, None)
    _executions(on_bwrap, "passed", 3)
    _executions(on_bwrap, "failed", 2)
    _executions(on_docker, "sandbox_error", 1)
    _executions(on_docker, "pending", 4)
    _executions(unnamed, "timeout", 1)

    parsed = _scrape(client)
    found = {dict(labels)["status"] + "/" + dict(labels)["backend"]: value
             for (name, labels), value in parsed.items() if name == "platform_executions"}  # fmt: skip
    assert found == {
        "passed/bwrap": 3, "failed/bwrap": 2, "sandbox_error/docker": 1, "pending/docker": 4, "timeout/unknown": 1,
    }  # fmt: skip
    assert sample(parsed, "platform_metrics_database_up") == 1


def test_queue_lengths_count_the_messages_on_the_redis_broker_at_every_priority(client, redis_broker):
    """Real Celery messages on the real Redis broker: kombu keeps each priority step in a
    list of its own ("sandbox" for 0, "sandbox\\x06\\x166" for the default 6)."""
    import redis

    from evaluation.tasks import run_execution, verify_version
    from trainer_bridge.tasks import run_rewards

    for execution_id in (1, 2, 3):
        run_execution.apply_async((execution_id,), queue="sandbox")  # CELERY_TASK_DEFAULT_PRIORITY
    for chunk in ([1], [2]):
        run_rewards.apply_async((chunk,), queue="sandbox", priority=0)  # rewards first
    verify_version.delay(7)
    client_redis = redis.Redis.from_url(redis_broker)
    try:
        # Pushed straight onto the list, as another producer of the queue would.
        client_redis.rpush("celery", b"{}")
        assert client_redis.llen("sandbox") == 2  # the layout the figure relies on
    finally:
        client_redis.close()

    parsed = _scrape(client)
    assert sample(parsed, "platform_celery_queue_length", queue="sandbox") == 5
    assert sample(parsed, "platform_celery_queue_length", queue="celery") == 2
    assert sample(parsed, "platform_celery_unacked_messages") == 0
    assert sample(parsed, "platform_metrics_broker_up") == 1


def test_a_broker_that_does_not_answer_is_a_zero_up_figure_not_a_failed_scrape(client, settings, closed_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/7"
    parsed = _scrape(client)
    assert sample(parsed, "platform_metrics_broker_up") == 0
    assert sample(parsed, "platform_metrics_pool_reports_up") == 0
    assert sample(parsed, "platform_metrics_database_up") == 1


def test_pool_stats_are_shown_per_worker_host_and_backend(client, redis_broker, monkeypatch):
    monkeypatch.setenv("SANDBOX_BACKEND", "bwrap")
    pool = engine.get_pool("bwrap")
    reporters = [PoolReporter(redis_broker, host) for host in ("w1@host-a", "w2@host-b")]
    published = [reporter.publish() for reporter in reporters]
    try:
        parsed = _scrape(client)
    finally:
        for reporter in reporters:
            reporter.stop()
    for host, reports in zip(("w1@host-a", "w2@host-b"), published, strict=True):
        (report,) = [r for r in reports if r["backend"] == "bwrap"]
        labels = {"host": host, "backend": "bwrap"}
        assert sample(parsed, "platform_sandbox_pool_size", **labels) == pool.size == report["size"]
        assert sample(parsed, "platform_sandbox_pool_started_total", **labels) == report["started"]
        assert sample(parsed, "platform_sandbox_pool_leased", **labels) == report["leased"]
        assert sample(parsed, "platform_sandbox_pool_processes", **labels) == 1
        assert sample(parsed, "platform_sandbox_pool_report_age_seconds", **labels) >= 0
    # A stopped reporter takes its reports away at once.
    assert not [key for key in _scrape(client) if key[0] == "platform_sandbox_pool_size"]


def test_failed_sandbox_starts_and_their_retries_are_counted_per_host_backend_and_reason(client, redis_broker):
    from evaluation.sandbox import counters

    counters.reset()
    for retry in (True, True, False):  # a start tried three times: two retried, the last one given up
        counters.record_start_failure({"event": "sandbox_start_failure", "backend": "bwrap", "kind": "warm",
                                       "reason": "killed", "attempt": 1, "retry": retry, "detail": "test"})  # fmt: skip
    counters.record_start_failure({"event": "sandbox_start_failure", "backend": "docker", "kind": "cold",
                                   "reason": "engine_error", "attempt": 1, "retry": True,
                                   "detail": "test"})  # fmt: skip
    reporter = PoolReporter(redis_broker, "w1@host-a")
    try:
        reports = reporter.publish()
        parsed = _scrape(client)
    finally:
        reporter.stop()
        counters.reset()
    by_backend = {report["backend"]: report for report in reports}
    assert by_backend["bwrap"]["start_failures"] == {"killed": 3}
    assert by_backend["docker"]["start_retries"] == {"engine_error": 1}
    labels = {"host": "w1@host-a", "backend": "bwrap", "reason": "killed"}
    assert sample(parsed, "platform_sandbox_start_failures_total", **labels) == 3
    assert sample(parsed, "platform_sandbox_start_retries_total", **labels) == 2
    docker = {"host": "w1@host-a", "backend": "docker", "reason": "engine_error"}
    assert sample(parsed, "platform_sandbox_start_failures_total", **docker) == 1
    assert sample(parsed, "platform_sandbox_start_retries_total", **docker) == 1


def test_metrics_need_the_token_when_one_is_set(client, settings):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "not_authenticated"  # the one shape
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token").status_code == 200


def test_without_a_token_metrics_are_for_direct_callers_from_private_addresses(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.4.0.9").status_code == 200
    outside = client.get("/metrics", REMOTE_ADDR="8.8.8.8")
    assert outside.status_code == 403 and outside.json()["error"]["code"] == "permission_denied"
    # Through a proxy: whoever is behind it may be outside.
    assert client.get("/metrics", REMOTE_ADDR="10.4.0.2", HTTP_X_FORWARDED_FOR="8.8.8.8").status_code == 403


def test_every_metric_and_label_is_documented(client, curator, redis_broker):
    _executions(_verification(make_task(owner=curator, slug="documented").latest_version, "bwrap"), "passed", 1)
    client.get("/api/v1/me/")
    reporter = PoolReporter(redis_broker, "w1@host-a")
    reporter.publish()
    try:
        text = client.get("/metrics").content.decode()
    finally:
        reporter.stop()
    docs = DOCS.read_text()
    families = family_names(text)
    assert len(families) >= 15
    for name, labels in families.items():
        exposed = name + "_total" if f"{name}_total" in text else name
        row = next((line for line in docs.splitlines() if line.startswith(f"| `{exposed}` |")), None)
        assert row is not None, f"{exposed} is not in docs/operations.md"
        for label in labels:
            assert f"`{label}`" in row, f"label {label} of {exposed} is not documented on its row"
