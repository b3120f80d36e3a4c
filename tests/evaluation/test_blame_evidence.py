"""Whose fault a bad run is, decided on evidence (evaluation/sandbox/evidence.py):
a sandbox killed from outside is never the solution's failure, a solution that
breaks its own sandbox still is."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from evaluation.sandbox import engine, evidence, memory_cgroups
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status
from tests.evaluation.conftest import needs_bwrap, needs_docker
from tests.faults.outside import descendants, kill, killing, sandbox_inits, wait_for

ADD = "def add(a, b):\n    return a + b\n"
SLOW_ADD = "import time\n\n\ndef add(a, b):\n    time.sleep(2.0)\n    return a + b\n"


def request_for(solution: str, *, wall_s: float = 6.0) -> RunRequest:
    return RunRequest(suite_kind="assertions", solution=solution, tests={"hidden": ["assert add(1, 2) == 3"]},
                      entry_point="add", limits=Limits(wall_s=wall_s, cpu_s=4))  # fmt: skip


@pytest.fixture
def pool():
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=1, wait_s=0.5)
    yield pool
    pool.close()


# -- the rule, attempt by attempt --------------------------------------------------------------


def attempt(anomaly: str | None, detail: str = "") -> engine._Attempt:
    made = engine._Attempt()
    made.anomaly, made.detail = anomaly, detail
    return made


@pytest.mark.parametrize(
    ("first", "rerun", "status"),
    [
        # The rerun, in a sandbox that has seen nothing else, decides.
        ("zygote_died", "zygote_died", Status.FAILED),
        ("start_failed", "zygote_died", Status.FAILED),  # the first never ran: the rerun's evidence stands
        ("judge_unresponsive", "judge_unresponsive", Status.TIMEOUT),
        ("sandbox_died", "container_oom", Status.MEMORY_EXCEEDED),
        # No evidence against the solution: ours.
        ("zygote_died", "sandbox_died", Status.SANDBOX_ERROR),  # killed from outside during the rerun
        ("sandbox_died", "sandbox_died", Status.SANDBOX_ERROR),  # killed from outside twice
        ("agent_error", "agent_error", Status.SANDBOX_ERROR),
        ("host_deadline", "host_deadline", Status.SANDBOX_ERROR),  # the agent (PID 1) went silent
        ("protocol", "protocol", Status.SANDBOX_ERROR),
        ("host_oom", "host_oom", Status.SANDBOX_ERROR),
        ("zygote_died", "incomplete_record", Status.SANDBOX_ERROR),
    ],
)
def test_the_fresh_rerun_decides_and_only_evidence_blames_the_solution(first, rerun, status):
    result = engine._blame(request_for(ADD), attempt(first), attempt(rerun, "what happened"), "bwrap")
    assert result.status == status
    assert result.anomaly == rerun
    assert first in result.message
    if status == Status.SANDBOX_ERROR:
        assert "not the solution" in result.message and "what happened" in result.message


# -- real sandboxes, real faults -----------------------------------------------------------------


@needs_bwrap
def test_a_correct_solution_whose_sandboxes_are_killed_from_outside_twice_is_a_sandbox_error(pool):
    me = os.getpid()
    pool.warm()
    with killing(lambda: [p.pid for p in sandbox_inits(me)], every_s=(0.1, 0.2), everything=True) as killer:
        result = engine.run(request_for(SLOW_ADD), backend="bwrap", pool=pool)
    assert killer.killed, "the drill killed nothing"
    assert result.status == Status.SANDBOX_ERROR, result.message
    assert result.attempts == 2 and not result.passed
    assert "not the solution" in result.message


@needs_bwrap
def test_a_sandbox_killed_from_outside_once_gives_the_reruns_true_verdict(pool):
    me = os.getpid()
    pool.warm()
    warm = [p.pid for p in sandbox_inits(me)]
    # Mid-run (the solution sleeps 2 s): the pool's sandbox only, once.
    timer = threading.Timer(0.6, kill, args=(warm,))
    timer.start()
    result = engine.run(request_for(SLOW_ADD), backend="bwrap", pool=pool)
    timer.join()
    assert result.status == Status.PASSED and result.attempts == 2
    assert result.anomaly == "sandbox_died"


@needs_bwrap
def test_a_solution_that_kills_its_zygote_still_fails_in_the_fresh_rerun(pool):
    killer = "import os\nimport signal\n\n\ndef add(a, b):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 3\n"
    result = engine.run(request_for(killer), backend="bwrap", pool=pool)
    assert result.status == Status.FAILED and result.attempts == 2
    assert result.anomaly == "zygote_died" and "zygote" in result.message


@needs_bwrap
def test_a_solution_process_killed_while_the_hosts_oom_killer_struck_is_rerun_not_failed(pool, tmp_path, monkeypatch):
    """The host's OOM killer picks the largest process, often a solution's, which then
    looks as if it crashed. Where sandboxes have no memory cgroups (a host not running
    as root: their own counters are tested in tests/security/test_memory_cgroups.py),
    the host-wide count is the evidence. The kernel's (/proc/vmstat) cannot be made to
    move in a test without exhausting the machine, so the test points the engine at a
    copy it moves itself while it kills the solution's process, as the OOM killer would."""
    monkeypatch.setattr(memory_cgroups, "for_uid", lambda uid: None)
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 1\noom_kill 7\nnr_foo 2\n")
    monkeypatch.setattr(evidence, "_VMSTAT", str(vmstat))
    monkeypatch.setattr(evidence, "_last", [0.0, -1.0])
    me = os.getpid()
    pool.warm()
    warm = {p.pid for p in sandbox_inits(me)}

    def solution_processes() -> list[int]:
        below = [p for init in sandbox_inits(me) if init.pid in warm for p in descendants(init.pid)]
        zygotes = {p.pid for p in below if p.ppid in warm}
        return [p.pid for p in below if p.ppid in zygotes]

    def oom_killer() -> None:
        time.sleep(0.2)  # the run has begun
        wait_for(lambda: len(solution_processes()) >= 1, timeout=5)
        time.sleep(0.3)
        vmstat.write_text("nr_free_pages 1\noom_kill 8\nnr_foo 2\n")
        kill(solution_processes(), signal.SIGKILL)

    thread = threading.Thread(target=oom_killer)
    thread.start()
    result = engine.run(request_for(SLOW_ADD), backend="bwrap", pool=pool)
    thread.join()
    assert result.status == Status.PASSED, result.message
    assert result.attempts == 2 and result.anomaly == evidence.HOST_OOM


def test_the_oom_count_is_read_from_the_kernels_vmstat():
    assert evidence.oom_kills() >= 0  # this kernel says; -1 would mean no evidence either way
    before = evidence.oom_kills_before()
    assert evidence.oom_struck_since(before) in (False, True)
    assert evidence.oom_struck_since(-1) is False


@needs_docker
def test_a_container_killed_from_outside_twice_is_a_sandbox_error_not_a_failure():
    import docker

    from evaluation.sandbox.docker_backend import LABEL
    from evaluation.sandbox.docker_owners import owner_id

    client = docker.from_env()
    pool = SandboxPool(engine.sandbox_factory("docker"), size=1, wait_s=0.5)
    ours = {"label": [f"{LABEL}.owner={owner_id()}"], "status": "running"}

    def our_containers() -> list[str]:
        return [c.id for c in client.containers.list(filters=ours)]

    def kill_containers(ids: list[str]) -> None:
        for cid in ids:
            try:
                client.containers.get(cid).kill()
            except Exception:  # noqa: S110 - gone already: that is the point
                pass

    try:
        pool.warm()
        stop = time.monotonic() + 8

        def docker_killer() -> None:
            while time.monotonic() < stop:  # a sweep every 0.7 s: most kills land mid-run
                kill_containers(our_containers())
                time.sleep(0.7)

        thread = threading.Thread(target=docker_killer, daemon=True)
        thread.start()
        result = engine.run(request_for(SLOW_ADD), backend="docker", pool=pool)
        stop = 0
        thread.join()
    finally:
        pool.close()
    assert result.status == Status.SANDBOX_ERROR, result.message
    assert result.attempts == 2 and "not the solution" in result.message
