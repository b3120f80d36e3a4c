"""One session's sandbox (bubblewrap): the prepared tree read-only at /base, the
session's own tree in a size-bounded tmpfs at /repo, and the session supervisor as
PID 1, kept for the whole episode.

A step is a frame to that supervisor and a fork() inside the sandbox: no container,
no new sandbox per step. The namespaces are those of every sandbox here (bwrap.py):
no network, its own PID namespace, its own uid when the host runs as root.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.bwrap import bwrap_path, launch, sandbox_python, stop
from evaluation.sandbox.channel import FrameReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import protocol
from evaluation.sandbox.harness_files import harness_version, readable_copy
from evaluation.sandbox.sessions.environments import PreparedEnvironment
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


def session_command(*, harness: str, tree: str, python: str, tree_bytes: int) -> list[str]:
    return [
        bwrap_path() or "bwrap",
        "--unshare-all",  # user, pid, net, ipc, uts, cgroup namespaces: no network
        "--die-with-parent",
        "--new-session",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--ro-bind", harness, "/harness",
        "--ro-bind", tree, "/base",
        *PYTHON_ALIAS,
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", str(tree_bytes), "--tmpfs", "/repo",
        "--size", str(64 * 1024 * 1024), "--tmpfs", "/tmp",
        "--size", str(1024 * 1024), "--tmpfs", "/dev/shm",
        "--chdir", "/repo",
        "--hostname", "sandbox",
        "--clearenv",
        "--setenv", "PATH", SANDBOX_PATH,
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONPATH", "/",
        "--cap-drop", "ALL",
        "--remount-ro", "/",
        "--as-pid-1",  # the supervisor is PID 1: kill(-1) from it ends every process of a step
        python, "-S", "-s", "-B", "-P", "-c", SESSION_ENTRY,
    ]  # fmt: skip


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
    backend = "bwrap"

    def __init__(self, environment: PreparedEnvironment, limits: SessionLimits) -> None:
        super().__init__(environment, limits)
        self.process: subprocess.Popen | None = None
        self.uid_lease = None
        self.environment_fd = -1

    def start(self, changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Start the sandbox and lay out its tree (the base, with `changes` over it for a
        fork); return the supervisor's `initialised` frame (the listing, the cwd)."""
        if bwrap_path() is None:
            raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
        self.environment_fd = self.environment.acquire()
        command = session_command(harness=str(readable_copy()), tree=str(self.environment.tree),
                                  python=sandbox_python(), tree_bytes=self.limits.tree_bytes)  # fmt: skip
        try:
            self.process, self.uid_lease = _LAUNCHER.submit(
                launch, command, slot=os.getpid(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
            ).result()
            self.reader = FrameReader(self.process.stdout.fileno())
            return self._greet_and_lay_out(changes)
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _write(self, data: bytes) -> None:
        protocol.write_all(self.process.stdin.fileno(), data)

    def close(self) -> None:
        """Kill the sandbox and everything in it; afterwards nothing of the episode runs."""
        process, self.process = self.process, None
        try:
            if process is not None:
                stop(process)
                for stream in (process.stdin, process.stdout):
                    try:
                        stream.close()
                    except OSError:
                        pass
        finally:
            if self.uid_lease is not None:
                self.uid_lease.release()
                self.uid_lease = None
            if self.environment_fd >= 0:
                os.close(self.environment_fd)
                self.environment_fd = -1


class ExportFailed(Exception):
    """The episode's changes are more than a verdict or a fork will carry (the episode's doing)."""
