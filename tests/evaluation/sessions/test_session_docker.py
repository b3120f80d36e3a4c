"""The same sessions on the Docker backend: a container per session, the same supervisor,
the same verdict rules; a hostile episode earns nothing there either."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluation.sandbox.sessions.host import SessionHost
from tests.sessions_world import FIX_NEW, FIX_OLD, LIMITS, SPEC, Stepper

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_host() -> Iterator[SessionHost]:
    host = SessionHost(max_sessions=4, backend="docker")
    yield host
    host.shutdown()


def test_an_episode_in_a_container_earns_its_reward_and_forks(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    step = Stepper(session)
    assert step.bash("git log --oneline --all | wc -l; python --version; id -u")["stdout"].splitlines()[0] == "1"
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    assert step("run_tests")["exit_code"] == 0
    (child,) = docker_host.fork(session.id, 1)
    assert "middle - 1" in Stepper(child).bash("cat stats/core.py")["stdout"]
    daemon = step.bash("(sleep 1; touch late.txt) & echo started")
    assert daemon["stdout"] == "started\n"
    assert "late.txt" not in step.bash("sleep 1.5; ls")["stdout"]  # killed with its step
    verdict = session.submit()
    assert verdict.reward == 1.0, verdict.log
    assert child.submit().reward == 1.0


def test_a_conftest_hack_in_a_container_earns_nothing(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    hack = "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    hack += "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    Stepper(session)("write_file", path="conftest.py", content=hack)
    verdict = session.submit()
    assert verdict.reward == 0.0 and {"path": "conftest.py", "why": "protected path: restored from the task"} in (
        verdict.dropped
    )
