"""A session family: one bwrap sandbox whose sessions are forked from a warm interpreter.

A created session starts a family (bwrap, an interpreter, the session harness's
imports: the cost of any sandbox started by exec) and is its first member; forks of
it are further members, each forked by the family's holder into namespaces of its
own (evaluation/sandbox/harness/session_family.py), at the cost of a fork and the tree
laid out in memory. The family holds one uid lease and the environment's tree for as
long as any member lives, and its sandbox is stopped when the last one leaves.

Members share the holder's read-only system, its /base and its uid; each has its own
PID, mount, user, network, IPC and UTS namespaces, /proc, terminals, /repo, /tmp and
/dev/shm. Per-uid limits are counted per user namespace (Linux 5.14 and later), so a
member's processes count against its own step limit, not its siblings'.
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import Any

from evaluation.sandbox.bwrap import launch, stop, system_arguments
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import lite
from evaluation.sandbox.harness_files import harness_version
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.templates import receive_control, request_control
from evaluation.sandbox.uids import UidLease

FAMILY_ENTRY = "from harness.session_family import entry; entry()"
START_TIMEOUT_S = 20.0
WHO = "the session family's sandbox"


def family_command(*, harness: str, tree: str, python: str, path: str, python_alias: tuple[str, ...]) -> list[str]:
    """The family's bwrap: what a session sandbox was before families, with the places a
    member writes left as bare mount points (each member mounts its own)."""
    return [
        *system_arguments(harness),  # no network among them
        "--ro-bind", tree, "/base",
        *python_alias,
        "--proc", "/proc",
        "--dev", "/dev",
        "--dir", "/repo",
        "--dir", "/tmp",  # noqa: S108  (a mount point: each member mounts its own tmpfs there)
        "--dir", "/dev/shm",  # noqa: S108
        "--chdir", "/",
        "--hostname", "sandbox",
        "--clearenv",
        "--setenv", "PATH", path,
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONPATH", "/",
        "--cap-drop", "ALL",
        "--remount-ro", "/",
        # bwrap's /dev is a tmpfs of the sandbox's uid: read-only, so that no member
        # leaves a file there for a sibling. Its nodes are mounts of their own.
        "--remount-ro", "/dev",
        "--as-pid-1",  # the holder is PID 1: the reaper of every member that ends
        python, "-S", "-s", "-B", "-P", "-c", FAMILY_ENTRY,
    ]  # fmt: skip


class SessionFamily:
    """The holder of one family's sandbox, and the count of members it serves."""

    def __init__(self, environment: PreparedEnvironment) -> None:
        self.environment = environment
        self.process: subprocess.Popen | None = None
        self.ctl: lite.Socket | None = None
        self.uid_lease: UidLease | None = None
        self.environment_fd = -1
        self.lock = threading.Lock()  # one control exchange at a time
        self.members = 0
        self.closed = False

    def start(self, command: list[str], *, slot: int) -> SessionFamily:
        """Launch the holder (on a long-lived thread: see sandbox.py) and read its greeting."""
        self.environment_fd = self.environment.acquire()
        self.ctl, theirs = lite.socketpair(lite.SOCK_SEQPACKET)
        try:
            try:
                self.process, self.uid_lease, _ = launch(command, slot=slot, stdin=theirs.fileno(),
                                                         stdout=subprocess.DEVNULL, memory_cgroup=False)  # fmt: skip
            finally:
                theirs.close()
            greeting = receive_control(self.ctl, START_TIMEOUT_S, who=WHO)
            if greeting.get("op") != "ready" or greeting.get("harness") != harness_version():
                raise SandboxFailure(f"unexpected greeting from a session sandbox: {greeting}", anomaly="start_failed",
                                     reason="bad_greeting")  # fmt: skip
        except BaseException:
            self._stop()
            raise
        return self

    @property
    def alive(self) -> bool:
        return not self.closed and self.process is not None and self.process.poll() is None

    def join(self) -> bool:
        """Count one more member in, unless the family is gone or going."""
        with self.lock:
            if not self.alive:
                return False
            self.members += 1
            return True

    def leave(self) -> None:
        """One member fewer; the last one out stops the sandbox."""
        with self.lock:
            self.members -= 1
            last = self.members <= 0
            if last:
                self.closed = True
        if last:
            self._stop()

    def spawn(self, stdin_fd: int, stdout_fd: int, *, tree_bytes: int) -> int:
        """A new member on these descriptors, its /repo a tmpfs of `tree_bytes`; its id."""
        reply = self._request({"op": "fresh", "tree_bytes": int(tree_bytes)}, [stdin_fd, stdout_fd])
        if reply.get("op") != "forked":
            raise SandboxFailure(f"the session family refused a new session: {reply}", anomaly="start_failed",
                                 reason="family_refused")  # fmt: skip
        return int(reply["id"])

    def kill(self, member_id: int) -> None:
        """Kill a member and everything in it; returns once all of it is reaped."""
        reply = self._request({"op": "kill", "id": member_id}, [])
        if reply.get("op") != "killed":
            raise SandboxFailure(f"the session family could not end session {member_id}: {reply}", anomaly="protocol")

    def _request(self, message: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        with self.lock:
            if self.process is None or self.process.poll() is not None or self.ctl is None:
                raise SandboxFailure("the session family's sandbox is gone", anomaly="sandbox_died")
            return request_control(self.ctl, message, fds, who=WHO, anomaly="sandbox_died")

    def _stop(self) -> None:
        """Kill the sandbox (every member with it) and give back what the family held."""
        process, self.process = self.process, None
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        try:
            if process is not None:
                stop(process)
        finally:
            if self.uid_lease is not None:
                self.uid_lease.release()
                self.uid_lease = None
            if self.environment_fd >= 0:
                os.close(self.environment_fd)
                self.environment_fd = -1

    def close(self) -> None:
        """Stop the family whatever its members (a host shutting down)."""
        with self.lock:
            self.closed = True
        self._stop()
