"""Warm pools (reuse, recycling, busy, health, reapers) and who is blamed when a
run goes wrong: the infrastructure (sandbox_error) or the solution."""

from __future__ import annotations

import time

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.errors import PoolBusy
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status
from evaluation.sandbox.uids import reap_orphaned_uids
from tests.evaluation.conftest import needs_bwrap

ADD = "def add(a, b):\n    return a + b\n"


def trivial(solution: str = ADD) -> RunRequest:
    return RunRequest(suite_kind="assertions", solution=solution, tests={"hidden": ["assert add(1, 2) == 3"]},
                      entry_point="add", limits=Limits(wall_s=3, cpu_s=2))  # fmt: skip


@pytest.fixture
def pool():
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=1, wait_s=0.2, max_runs=3)
    yield pool
    pool.close()


@needs_bwrap
def test_a_warm_sandbox_is_reused_and_recycled_after_max_runs(pool):
    ids = [engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id for _ in range(4)]
    assert ids[0] == ids[1] == ids[2] != ids[3]
    assert pool.stats()["recycled"] == 1


@needs_bwrap
def test_runs_one_after_another_go_to_the_longest_idle_sandbox():
    """The sandbox a run just left is still ending that run (killing, wiping, forking
    its next spare): the next run goes to the one that has been idle longest."""
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=2)
    try:
        pool.warm()
        ids = [engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id for _ in range(4)]
    finally:
        pool.close()
    assert ids[0] != ids[1] and ids[0] == ids[2] and ids[1] == ids[3]
    assert pool.stats()["started"] == 2


@needs_bwrap
def test_a_sandbox_past_its_maximum_age_is_retired(pool):
    # What lets another host's reaper call an old container no one's.
    first = engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id
    assert engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id == first
    pool.max_age_s = 0.05
    time.sleep(0.1)
    third = engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id  # found idle and too old
    assert third != first and pool.stats()["recycled"] == 1


@needs_bwrap
def test_a_sandbox_first_leased_on_a_thread_that_ends_stays_warm(pool):
    # bwrap dies with its parent *thread* (PR_SET_PDEATHSIG): the pool starts sandboxes
    # on threads of its own, so one leased from a short-lived worker thread survives it.
    import threading

    ids = []
    worker = threading.Thread(target=lambda: ids.append(engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id))
    worker.start()
    worker.join()
    time.sleep(0.3)  # time for a death signal to arrive, were one sent
    again = engine.run(trivial(), backend="bwrap", pool=pool)
    assert again.status == Status.PASSED and again.sandbox_id == ids[0]
    assert pool.stats()["started"] == 1 and pool.stats()["recycled"] == 0


@needs_bwrap
def test_a_full_pool_answers_busy_instead_of_overloading(pool):
    with pool.lease(), pytest.raises(PoolBusy, match="all 1 sandboxes are busy"):
        engine.run(trivial(), backend="bwrap", pool=pool)


@needs_bwrap
def test_a_sandbox_is_never_reused_after_an_anomaly(pool):
    killer = "import os\ndef add(a, b):\n    os.kill(os.getppid(), 9)\n"
    before = engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id
    engine.run(trivial(killer), backend="bwrap", pool=pool)
    after = engine.run(trivial(), backend="bwrap", pool=pool).sandbox_id
    assert before != after


@needs_bwrap
def test_a_dead_idle_sandbox_is_replaced_at_the_next_lease(pool, monkeypatch):
    first = engine.run(trivial(), backend="bwrap", pool=pool)
    sandbox, _ = pool._idle[0]
    sandbox.process.kill()
    sandbox.process.wait()
    second = engine.run(trivial(), backend="bwrap", pool=pool)
    assert second.passed and second.sandbox_id != first.sandbox_id and second.attempts == 1


@needs_bwrap
def test_a_solution_that_kills_its_judge_fails_after_a_clean_rerun(pool):
    result = engine.run(
        trivial("import os\ndef add(a, b):\n    os.kill(os.getppid(), 9)\n"), backend="bwrap", pool=pool
    )
    assert result.status == Status.FAILED and result.attempts == 2
    assert "no complete result record" in result.message


@needs_bwrap
def test_a_sandbox_that_cannot_start_is_a_sandbox_error_not_a_wrong_answer(monkeypatch):
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")
    result = engine.run(trivial(), backend="bwrap", warm=False)
    assert result.status == Status.SANDBOX_ERROR
    assert result.anomaly == "start_failed" and not result.passed


@needs_bwrap
def test_a_bwrap_sandbox_runs_as_its_own_uid_in_its_own_session():
    import os

    from evaluation.sandbox.bwrap import BwrapSandbox

    sandbox = BwrapSandbox(slot=901).start()
    try:
        with open(f"/proc/{sandbox.process.pid}/status") as handle:
            status = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        uids, gids, groups = status["Uid"].split(), status["Gid"].split(), status["Groups"].split()
        if os.geteuid() == 0:  # root hands each sandbox a uid of its own, and no groups
            assert sandbox.uid not in (None, 0)
            assert set(uids) == set(gids) == {str(sandbox.uid)} and groups == []
            assert sandbox.ready["uid"] == sandbox.uid
        else:
            assert set(uids) == {str(os.geteuid())}
        assert os.getsid(sandbox.process.pid) == sandbox.process.pid  # its own session: killpg takes it all
    finally:
        sandbox.close()


@needs_bwrap
def test_the_bwrap_reaper_kills_processes_of_a_sandbox_whose_owner_is_gone():
    from evaluation.sandbox.bwrap import BwrapSandbox

    sandbox = BwrapSandbox(slot=900).start()
    try:
        assert sandbox.alive
        reap_orphaned_uids()
        assert sandbox.alive and sandbox.ping()  # its uid is held by a live owner: left alone
        sandbox.uid_lease.release()  # what a crashed worker's death does to its lock
        sandbox.uid_lease = None
        assert reap_orphaned_uids() >= 1
        deadline = time.monotonic() + 5
        while sandbox.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not sandbox.alive
    finally:
        sandbox.close()


# The Docker reaper and its owners' heartbeats: tests/evaluation/test_docker_owners.py.


@needs_bwrap
def test_a_warm_sandbox_leaks_no_descriptors_across_runs(pool):
    pool.max_runs = 1000
    for _ in range(5):
        engine.run(trivial(), backend="bwrap", pool=pool)
    with pool.lease() as sandbox:
        sandbox._send({"op": "ping"})
        before = sandbox.reader.read(time.monotonic() + 5)["open_fds"]
    stdio = RunRequest(
        suite_kind="stdio",
        solution="print(input())\n",
        tests={"hidden": [{"input": "x\n", "output": "x"}] * 3},
        limits=Limits(wall_s=3, cpu_s=2),
    )
    for _ in range(20):
        engine.run(trivial(), backend="bwrap", pool=pool)
        engine.run(trivial("def add(a, b):\n    raise ValueError\n"), backend="bwrap", pool=pool)
        engine.run(stdio, backend="bwrap", pool=pool)
    with pool.lease() as sandbox:
        sandbox._send({"op": "ping"})
        after = sandbox.reader.read(time.monotonic() + 5)["open_fds"]
    assert after == before


SCAN = """
import ctypes
import re


def add(a, b):
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: make its own memory readable, as an attacker would
    # The other run's marker is looked for in two halves that this process never
    # holds side by side, so finding it means finding the other run's bytes.
    head, tail = ("SOLUTION" + "-MARKER-" + {tag!r}[:16]).encode(), {tag!r}[16:].encode()
    own = ("OWN" + "-MARKER-" + {tag!r}) * 3  # the positive control: this process's own data
    found_own = found_other = False
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            match = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
            if not match or "[vvar]" in line:
                continue
            start, end = int(match[1], 16), int(match[2], 16)
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            at = chunk.find(head)
            while at >= 0 and not found_other:
                found_other = chunk[at + len(head) : at + len(head) + len(tail)] == tail
                at = chunk.find(head, at + 1)
            found_own = found_own or own.encode() in chunk
    return [found_own, found_other]
"""


@needs_bwrap
def test_no_run_finds_an_earlier_runs_solution_in_its_memory(pool):
    import uuid

    tag = uuid.uuid4().hex
    first = trivial(f"SECRET = 'SOLUTION-MARKER-{tag}' * 3\n" + ADD)
    scan = RunRequest(suite_kind="assertions", solution=SCAN.format(tag=tag),
                      tests={"hidden": ["assert add(1, 2) == [True, False]"]}, entry_point="add",
                      limits=Limits(wall_s=10, cpu_s=10, memory_mb=512))  # fmt: skip
    a = engine.run(first, backend="bwrap", pool=pool)
    b = engine.run(scan, backend="bwrap", pool=pool)
    assert a.sandbox_id == b.sandbox_id
    assert b.status == Status.PASSED, b.tests
