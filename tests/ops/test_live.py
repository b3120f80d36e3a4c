"""The operational endpoints on a running platform: gunicorn (two processes, the
multiprocess metrics mode) and two Celery workers on the real Redis broker
(TEST_REDIS_DB) and the PostgreSQL test database. A curator submits a task through
the web API, the web enqueues its verification, the workers run it; then /healthz is
200 and /metrics shows the executions and both workers' sandbox pools.

Every process is started in a session of its own and stopped by its process group
(tests/evaluation/workers.py, bench/stack.py).
"""

from __future__ import annotations

import json
import time

import pytest
import requests

from bench.stack import free_port, start, stop
from evaluation.models import Verification, VerificationState
from tasks_app.services import api_token_create
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS
from tests.evaluation.workers import REDIS_URL, database_url, wait_for
from tests.factories import make_task

from .conftest import parse_metrics, sample

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]
METRICS_TOKEN = "live-test-metrics-token"
HOSTS = ("w1@host-a", "w2@host-b")


def test_a_verification_through_web_and_two_workers_shows_in_health_and_metrics(curator, workers, tmp_path):
    from django.db import connection

    started = time.monotonic()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (tmp_path / "prometheus").mkdir()  # empty at start, as multiprocess mode requires
    web = start(
        [_venv_bin("gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{port}", "-k", "gthread",
           "--workers", "2", "--threads", "4", "--log-level", "warning"],
        tmp_path / "web.log",
        DATABASE_URL=database_url(connection.settings_dict),
        CELERY_BROKER_URL=REDIS_URL,
        VERIFY_ON_SUBMIT="1",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus"),
        METRICS_TOKEN=METRICS_TOKEN,
        LOG_FORMAT="json",
    )  # fmt: skip
    try:
        # Reports every second (15 s in production), so the test need not wait for a beat.
        workers.start(*HOSTS, SANDBOX_POOL_REPORT_S="1", LOG_FORMAT="json")
        wait_for(lambda: _answers(f"{base}/livez"), timeout=60, what="gunicorn")
        ready_s = time.monotonic() - started

        task = make_task(
            owner=curator, slug="live-clamp", title="Clamp", entry_point="clamp",
            statement="Clamp x into [low, high].", starter_code="def clamp(x, low, high):\n    ...\n",
            visible_tests=["assert clamp(3, 0, 10) == 3"], hidden_tests=STRONG_CLAMP_TESTS,
            solutions=[{"role": "reference", "label": "ref", "code": CLAMP},
                       {"role": "adversarial", "label": "no-upper-bound", "code": NO_UPPER_BOUND}],
            time_limit_s=2,
        )  # fmt: skip
        secret = api_token_create(user=curator, name="live", scopes=["read", "write"]).secret
        submitted = requests.post(
            f"{base}/api/v1/tasks/live-clamp/transitions/",
            json={"to_state": "submitted"},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
        assert submitted.status_code == 201, submitted.text

        def done() -> Verification | None:
            verification = Verification.objects.filter(version_id=task.latest_version_id).first()
            return verification if verification and verification.state == VerificationState.DONE else None

        try:
            verification = wait_for(done, timeout=90, what="the verification to finish")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{workers.logs()}\n--- web ---\n{_tail(tmp_path / 'web.log')}") from None
        run_s = time.monotonic() - started - ready_s

        health = requests.get(f"{base}/healthz", timeout=30)
        body = health.json()
        assert health.status_code == 200, body
        assert all(check["ok"] for check in body["checks"].values()), body
        assert body["checks"]["sandbox"]["workers"] == 2

        assert requests.get(f"{base}/metrics", timeout=30).status_code == 401
        scrape = requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
        assert scrape.status_code == 200
        parsed = parse_metrics(scrape.text)
    finally:
        stop(web)

    executions = {dict(labels)["status"]: value for (name, labels), value in parsed.items()
                  if name == "platform_executions" and dict(labels)["backend"] == "bwrap"}  # fmt: skip
    assert sum(executions.values()) == verification.total > 0
    assert set(executions) <= {"passed", "failed", "error", "timeout"}, executions
    for host in HOSTS:
        assert sample(parsed, "platform_sandbox_pool_processes", host=host, backend="bwrap") == 1, host
        assert sample(parsed, "platform_sandbox_backend_usable", host=host, backend="bwrap") == 1, host
        assert (sample(parsed, "platform_sandbox_pool_size", host=host, backend="bwrap") or 0) >= 1, host
    started_total = sum(
        sample(parsed, "platform_sandbox_pool_started_total", host=host, backend="bwrap") or 0 for host in HOSTS
    )
    assert started_total >= 1
    # Counted by whichever gunicorn process served it, read back through the multiprocess files.
    assert sample(parsed, "platform_http_requests_total", method="POST", route="api-transition-list", status="2xx")
    assert sample(parsed, "platform_celery_queue_length", queue="sandbox") == 0
    # The workers logged JSON lines (LOG_FORMAT=json), the per-execution line among them, flat.
    lines = [json.loads(line) for w in workers.workers for line in w.log().splitlines() if line.startswith("{")]
    assert any(line.get("message") == "execution" and line.get("backend") == "bwrap" for line in lines)
    print(f"\n[live] ready in {ready_s:.1f} s, {verification.total} executions in {run_s:.1f} s")


def _venv_bin(name: str) -> str:
    import sys
    from pathlib import Path

    return str(Path(sys.executable).with_name(name))


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _tail(path, size: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""
