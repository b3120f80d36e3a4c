"""Forks of one session share a sandbox (its family: sessions/family.py) and nothing else.

A GRPO group's episodes are forks of one prepared session, forked by the family's
holder into namespaces of their own. Each test here is one way a fork could reach a
sibling, or outlive the family, and shows it cannot.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from evaluation.sandbox.sessions.host import SessionHost
from tests.sessions_world import FIX_NEW, FIX_OLD, LIMITS, SPEC, Stepper

pytestmark = pytest.mark.bwrap


@pytest.fixture
def family(host, session):
    """A prepared session and two forks of it, all three in one family."""
    Stepper(session).bash("echo prepared > prepared.txt")
    first, second = host.fork(session.id, 2)
    assert first.sandbox.family is session.sandbox.family is second.sandbox.family
    return session, first, second


def test_forks_are_forked_into_the_parents_family_not_started(family):
    parent, first, second = family
    assert parent.sandbox.process.pid == first.sandbox.process.pid == second.sandbox.process.pid
    assert parent.sandbox.family.members == 3
    for session in family:
        status = Stepper(session).bash("cat /proc/self/status; echo pid $$")["stdout"]
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        assert fields["CapEff"].strip() == fields["CapBnd"].strip() == "0000000000000000"
        assert fields["NoNewPrivs"].strip() == "1"


def test_a_fork_sees_only_its_own_processes_files_and_places(family):
    _parent, first, second = family
    Stepper(first).bash("echo first > /tmp/mine; echo first > /dev/shm/mine; echo first > only-first.txt")
    with _running(first, "sleep 3") as sleeping:  # a step of the first fork, running meanwhile
        assert _wait_for_process(first.sandbox.process.pid, "sleep", count=1)
        seen = Stepper(second).bash("ls /tmp /dev/shm; ls; ps -e -o comm= 2>/dev/null || ls /proc")["stdout"]
        assert "mine" not in seen and "only-first.txt" not in seen and "sleep" not in seen
        assert Stepper(second).bash("kill -9 -1; echo survived")["stdout"] == "survived\n"
    assert sleeping.result()["exit_code"] == 0  # the sibling's kill did not reach it
    assert Stepper(second).bash("cat prepared.txt")["stdout"] == "prepared\n"  # the state it was forked with
    pids = Stepper(second).bash("ls /proc | grep -E '^[0-9]+$' | sort -n | head -1")["stdout"].split()
    assert pids == ["1"]  # its supervisor is PID 1 of a namespace of its own
    assert Stepper(first).bash("cat /tmp/mine")["stdout"] == "first\n"


def test_nothing_is_left_in_the_shared_dev_for_a_sibling(family):
    _parent, first, second = family
    written = Stepper(first).bash("echo x > /dev/note; echo x > /dev/pts/note; ls /dev/pts")
    assert written["stderr"].count("Read-only file system") + written["stderr"].count("Permission denied") == 2
    assert written["stdout"] == "ptmx\n"  # a devpts of its own: no sibling's terminal in it
    assert "note" not in Stepper(second).bash("ls /dev /dev/pts")["stdout"]


def test_a_fork_bomb_in_one_fork_does_not_starve_its_sibling(family):
    _parent, first, second = family
    # Each fork's processes count against its own user namespace (Linux 5.14 and later):
    # the first fork at its process limit leaves the second its own.
    bomb = "for i in $(seq 400); do sleep 4 & done 2>/dev/null; wait"
    with _running(first, bomb, timeout_s=15) as bombing:
        assert _wait_for_process(first.sandbox.process.pid, "sleep", count=LIMITS.step_processes - 8)
        quiet = Stepper(second).bash("for i in 1 2 3 4 5 6 7 8; do sh -c true || exit 1; done; echo fine")
        assert quiet["stdout"] == "fine\n" and quiet["exit_code"] == 0, quiet
    assert "fork" in bombing.result()["stderr"] or bombing.result()["exit_code"] is not None


def test_closing_the_parent_or_a_fork_leaves_the_others_running(host, family):
    parent, first, second = family
    holder = parent.sandbox.process
    host.close(parent.id)
    assert Stepper(first).bash("cat prepared.txt")["stdout"] == "prepared\n"
    Stepper(second)("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    assert first.submit().reward == 0.0  # judged in a fresh sandbox; its member is gone
    assert holder.poll() is None and parent.sandbox is None
    assert second.submit().reward == 1.0
    deadline = time.monotonic() + 5
    while holder.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert holder.poll() is not None  # the last member gone, so is the family's sandbox
    assert not os.path.exists(f"/proc/{holder.pid}")


def test_a_daemon_of_a_closed_fork_is_gone_while_its_sibling_lives(host, family):
    _parent, first, second = family
    Stepper(first).bash("nohup setsid sh -c 'while true; do date >> /tmp/ticks; sleep 0.05; done' >/dev/null 2>&1 &")
    family_pid = first.sandbox.process.pid
    host.close(first.id)
    # No process of the closed fork's namespace is left below the family's sandbox.
    leftover = [pid for pid in _descendants(family_pid) if _comm(pid) == "sh"]
    assert leftover == []
    assert Stepper(second).bash("echo alive")["stdout"] == "alive\n"


def test_the_quota_counts_every_member_of_a_family(environment):
    host = SessionHost(max_sessions=3, spares=0)
    try:
        parent = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        host.fork(parent.id, 2)
        assert host.stats()["live"] == 3 and parent.sandbox.family.members == 3
    finally:
        host.shutdown()


@contextmanager
def _running(session, command: str, timeout_s: float = 10.0) -> Iterator[Future]:
    """A bash step of `session` running on another thread for the length of the block."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(Stepper(session).bash, command, timeout_s)


def _wait_for_process(family_pid: int, name: str, *, count: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if sum(_comm(pid) == name for pid in _descendants(family_pid)) >= count:
            return True
        time.sleep(0.05)
    return False


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = _ppid(int(entry))
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""
