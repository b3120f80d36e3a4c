"""One session's sandbox (bubblewrap): the prepared tree read-only at /base, the
session's own tree in a size-bounded tmpfs at /repo, and the session supervisor as
PID 1 of the session's own namespaces, kept for the whole episode.

A step is a frame to that supervisor and a fork() inside the sandbox: no container,
no new sandbox per step. A session is a member of a family (family.py): a created
session starts one, its forks are forked into it. The namespaces are those of every
sandbox here (bwrap.py): no network, its own PID namespace, its own uid (its
family's) when the host runs as root.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.bwrap import bwrap_path, sandbox_python
from evaluation.sandbox.channel import FrameReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import protocol
from evaluation.sandbox.harness_files import harness_version, readable_copy
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.sessions.family import SessionFamily, family_command
from evaluation.sandbox.sessions.limits import SessionLimits

SESSION_ENTRY = "from harness.session_supervisor import entry; entry()"
START_TIMEOUT_S = 20.0
# The host's own margin over a step's timeout: the supervisor kills the step at its
# timeout, so an answer later than this means the sandbox itself is stuck.
ANSWER_MARGIN_S = 15.0
MAX_EXPORT_BYTES = 48 * 1024 * 1024
# bwrap --die-with-parent is PR_SET_PDEATHSIG, which fires when the parent *thread*
# ends: a session started on a request's thread would die with that request. Sessions
# are launched from these threads, which live as long as the process.
_LAUNCHER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="session-launch")


# `python` as well as `python3`, as a repository's scripts and setup commands expect
# (Debian's /usr has only python3); PATH puts /opt/bin first.
PYTHON_ALIAS = ("--dir", "/opt/bin", "--symlink", "/usr/bin/python3", "/opt/bin/python")
SANDBOX_PATH = "/opt/bin:/usr/bin:/bin"


class SessionChannel:
    """The host's end of a session supervisor's frames, whatever runs it (bwrap here,
    Docker in docker_sandbox.py): the greeting, the tree laid out, steps, exports, verdicts."""

    backend = ""
    reader: Any = None

    def __init__(self, environment: PreparedEnvironment, limits: SessionLimits) -> None:
        self.environment = environment
        self.limits = limits
        self.id = f"session-{uuid.uuid4().hex[:12]}"
        self.ready: dict[str, Any] = {}

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    def _write(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    initialised: dict[str, Any] | None = None  # the supervisor's answer to `init`

    def layout(self) -> dict[str, Any]:
        """How the supervisor lays the tree out (its `init` options): here, by copying the
        base into a sized tmpfs, the supervisor's default."""
        return {}

    @classmethod
    def prune_environments(cls, cache: Any) -> list[str]:
        """Drop what this backend keeps per prepared environment that `cache` no longer
        holds; the digests dropped. A bubblewrap session keeps nothing but the tree."""
        return []

    def _greet_and_lay_out(self, changes: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.ready = self.reader.read(time.monotonic() + START_TIMEOUT_S)
        if self.ready.get("op") != "ready" or self.ready.get("harness") != harness_version():
            raise SandboxFailure(f"unexpected greeting from a session sandbox: {self.ready}", anomaly="start_failed")
        answer = self.call({"op": "init", "changes": changes or [], **self.layout()}, timeout_s=120.0)
        if answer.get("op") != "initialised":
            raise SandboxFailure(f"the session tree could not be laid out: {answer.get('message')}",
                                 anomaly="start_failed", reason="init_failed")  # fmt: skip
        self.initialised = answer
        return answer

    def sibling(self) -> SessionChannel | None:
        """An unstarted sandbox that a fork of this one's session can be started in more
        cheaply than a new one; None where the backend has no such thing (Docker)."""
        return None

    def apply(self, changes: list[dict[str, Any]]) -> dict[str, Any]:
        """Lay a fork's changes over this (spare, untouched) sandbox's tree; the new listing."""
        answer = self.call({"op": "apply", "changes": changes}, timeout_s=120.0)
        if answer.get("op") != "initialised":
            raise SandboxFailure(f"a fork's changes could not be laid out: {answer.get('message')}",
                                 anomaly="start_failed", reason="init_failed")  # fmt: skip
        return answer

    def call(self, message: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        if not self.alive:
            raise SandboxFailure("the session's sandbox is gone", anomaly="sandbox_died")
        try:
            self._write(protocol.encode_frame(message))
        except OSError as exc:
            raise SandboxFailure(f"the session's sandbox stopped reading: {exc}", anomaly="sandbox_died") from exc
        answer = self.reader.read(time.monotonic() + timeout_s + ANSWER_MARGIN_S)
        if answer.get("op") == "error":
            raise SandboxFailure(f"the session supervisor failed: {answer.get('message')}", anomaly="agent_error")
        return answer

    def step(self, action: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        return self.call({"op": "step", "action": action, "limits": self.limits.step_limits(),
                          "timeout_s": timeout_s}, timeout_s=timeout_s)  # fmt: skip

    def export(self) -> list[dict[str, Any]]:
        answer = self.call({"op": "export", "max_bytes": MAX_EXPORT_BYTES}, timeout_s=60.0)
        if answer.get("op") != "changes":
            raise ExportFailed(answer.get("message") or "the session's changes could not be read")
        return answer["changes"]

    def verdict(self, *, tests: list[str], hidden: dict[str, str], timeout_s: float, seed: int = 0) -> dict[str, Any]:
        return self.call({"op": "verdict", "tests": tests, "hidden": hidden, "timeout_s": timeout_s, "seed": seed,
                          "limits": self.limits.step_limits()}, timeout_s=timeout_s)  # fmt: skip


class SessionSandbox(SessionChannel):
    """A session in a bubblewrap sandbox: a member of a family (family.py), the first of
    a new one unless it is a fork's, made by `sibling()`."""

    backend = "bwrap"

    def __init__(self, environment: PreparedEnvironment, limits: SessionLimits,
                 family: SessionFamily | None = None) -> None:  # fmt: skip
        super().__init__(environment, limits)
        self.family = family
        self.member: int | None = None
        self.joined = False  # counted among the family's members, until close()
        self.stdin_w = -1
        self.stdout_r = -1

    def start(self, changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Start the sandbox and lay out its tree (the base, with `changes` over it for a
        fork); return the supervisor's `initialised` frame (the listing, the cwd)."""
        if bwrap_path() is None:
            raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
        try:
            if self.family is None or not self.family.join():
                self.family = _LAUNCHER.submit(self._new_family).result()
            self.joined = True
            stdin_r, self.stdin_w = os.pipe()
            self.stdout_r, stdout_w = os.pipe()
            try:
                self.member = self.family.spawn(stdin_r, stdout_w, tree_bytes=self.limits.tree_bytes)
            finally:
                os.close(stdin_r)
                os.close(stdout_w)
            self.reader = FrameReader(self.stdout_r)
            return self._greet_and_lay_out(changes)
        except BaseException:
            self.close()
            raise

    def _new_family(self) -> SessionFamily:
        command = family_command(harness=str(readable_copy()), tree=str(self.environment.tree),
                                 python=sandbox_python(), path=SANDBOX_PATH, python_alias=PYTHON_ALIAS)  # fmt: skip
        family = SessionFamily(self.environment).start(command, slot=os.getpid())
        family.join()
        return family

    def sibling(self) -> SessionSandbox | None:
        """An unstarted sandbox in this one's family: a fork's, forked by the family's
        holder rather than started by exec. None where the family is gone."""
        if self.family is None or not self.family.alive:
            return None
        return SessionSandbox(self.environment, self.limits, family=self.family)

    @property
    def process(self) -> subprocess.Popen | None:
        """The family's bwrap process (shared with every sibling)."""
        return self.family.process if self.family is not None else None

    @property
    def alive(self) -> bool:
        return self.member is not None and self.family is not None and self.family.alive

    def _write(self, data: bytes) -> None:
        protocol.write_all(self.stdin_w, data)

    def close(self) -> None:
        """Kill the sandbox and everything in it; afterwards nothing of the episode runs."""
        member, self.member = self.member, None
        family, joined, self.joined = self.family, self.joined, False
        try:
            # Killed before its channel closes: it never gets to end on its own.
            if family is not None and member is not None:
                family.kill(member)
        except SandboxFailure:
            family.close()  # a holder that cannot end a member is not one to keep
        finally:
            for fd in (self.stdin_w, self.stdout_r):
                if fd >= 0:
                    os.close(fd)
            self.stdin_w = self.stdout_r = -1
            if family is not None and joined:
                family.leave()


class ExportFailed(Exception):
    """The episode's changes are more than a verdict or a fork will carry (the episode's doing)."""
