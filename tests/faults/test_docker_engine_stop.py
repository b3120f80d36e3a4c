"""The Docker engine stopped while Docker sandboxes are leased.

A run in flight when dockerd stops (and kills its container) is a `sandbox_error`
that says the engine went away, never a wrong answer; runs asked for while it is down are sandbox errors too,
at once, not hangs; once the engine is back the same pool serves passing runs again
without being rebuilt, and nothing the pool made is left behind. On a worker, the
execution that met the stopped engine is retried with backoff (sandbox failures
only) and the verification finishes by itself after the engine returns.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from evaluation.models import VerificationState
from evaluation.sandbox import engine
from evaluation.sandbox.docker_backend import docker_client, reap_containers
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status
from evaluation.tasks import verify_version
from tests.evaluation.conftest import needs_docker
from tests.evaluation.test_celery_workers import (
    _assert_complete_and_unique,
    _submitted_clamp,
    _verification,
    _wait,
    _wait_state,
)
from tests.evaluation.workers import ROOT

from .services import DockerEngine

pytestmark = [needs_docker, pytest.mark.slow]

ADD = "def add(a, b):\n    return a + b\n"
# Longer than dockerd gives a container to stop (10 s) when it shuts down: the engine kills it.
SLOW_ADD = "import time\ntime.sleep(25)\n\n\n" + ADD


def _request(solution: str) -> RunRequest:
    return RunRequest(suite_kind="assertions", solution=solution, tests={"hidden": ["assert add(1, 2) == 3"]},
                      entry_point="add", limits=Limits(wall_s=60, cpu_s=10))  # fmt: skip


@pytest.fixture
def dockerd() -> Any:
    engine_ = DockerEngine(ROOT)
    yield engine_
    engine_.start()  # whatever happened: the rest of the suite needs it


def _platform_containers() -> int:
    from evaluation.sandbox.docker_backend import LABEL

    return len(docker_client().containers.list(all=True, filters={"label": LABEL}))


def test_a_run_in_flight_when_dockerd_stops_is_a_sandbox_error_and_the_pool_recovers(dockerd: DockerEngine) -> None:
    pool = SandboxPool(engine.sandbox_factory("docker"), size=1, wait_s=5)
    try:
        assert engine.run(_request(ADD), backend="docker", pool=pool).passed
        with ThreadPoolExecutor(1) as runner:
            in_flight = runner.submit(engine.run, _request(SLOW_ADD), backend="docker", pool=pool)
            deadline = time.monotonic() + 30
            while pool.stats().get("leased", 0) < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # inside the solution's sleep
            dockerd.stop()
            result = in_flight.result(timeout=120)
        assert result.status == Status.SANDBOX_ERROR and not result.passed
        assert "docker" in result.message.lower(), result.message

        started = time.monotonic()
        while_down = engine.run(_request(ADD), backend="docker", pool=pool)
        assert while_down.status == Status.SANDBOX_ERROR
        assert "does not answer" in while_down.message, while_down.message
        assert time.monotonic() - started < 60  # refused, not hung

        dockerd.start()
        after = engine.run(_request(ADD), backend="docker", pool=pool)
        assert after.status == Status.PASSED, after.message
    finally:
        pool.close()
    reap_containers()
    assert _platform_containers() == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_verification_on_docker_finishes_by_itself_after_dockerd_comes_back(
    curator: Any, workers: Any, dockerd: DockerEngine
) -> None:
    workers.start("w1@host-a", SANDBOX_BACKEND="docker", VERIFY_REPEATS="2", VERIFY_MUTANTS="4",
                  SANDBOX_POOL_SIZE="1")  # fmt: skip
    task = _submitted_clamp(curator, slug="dockerd-stop")
    version_pk = task.latest_version_id
    verify_version.delay(version_pk)

    def under_way() -> Any:
        verification = _verification(version_pk)
        return verification if verification is not None and 1 <= verification.done < verification.total else None

    _wait(workers, under_way, timeout=120, what="the verification to be under way")
    dockerd.stop()
    time.sleep(3)  # runs meet the stopped engine: sandbox errors, retried with backoff
    dockerd.start()
    verification = _wait_state(workers, version_pk, VerificationState.DONE, timeout=240)
    executions = _assert_complete_and_unique(verification)  # no sandbox_error is left as a verdict
    assert verification.verdict in ("verified", "flagged")
    print(f"\n[dockerd stop] {len(executions)} executions, attempts {sorted(e.attempts for e in executions)}")
