"""The bubblewrap backend: each sandbox is one `bwrap` process holding a warm agent.

Isolation: new user, PID, network, IPC, UTS and cgroup namespaces; the system
read-only (/usr only, no /etc, /home, /root, /var or project files); a private
size-bounded tmpfs as the only writable place; a scrubbed environment; the
whole sandbox run as an unprivileged uid of its own (when the host runs as
root), so per-user limits like the process count bind that sandbox alone.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
import uuid
from typing import Any

from evaluation.harness import protocol
from evaluation.sandbox.base import AgentSandbox
from evaluation.sandbox.channel import FrameReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness_files import AGENT_ENTRY, harness_version, readable_copy
from evaluation.sandbox.uids import UidLease, lease_uid

DEFAULT_PYTHON = "/usr/bin/python3"  # Debian's, with python3-pytest: the same userland as the image
SCRATCH_BYTES = 256 * 1024 * 1024
START_TIMEOUT_S = 20.0
_slots = itertools.count()


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_command(*, harness: str, python: str, hash_seed: int, warm: bool = True) -> list[str]:
    return [
        bwrap_path() or "bwrap",
        "--unshare-all",  # user, pid, net, ipc, uts, cgroup namespaces
        "--die-with-parent",
        "--new-session",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--ro-bind", harness, "/harness",
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", str(1024 * 1024), "--tmpfs", "/dev/shm",
        "--size", str(SCRATCH_BYTES), "--tmpfs", "/scratch",
        "--size", str(16 * 1024 * 1024), "--tmpfs", "/tmp",
        "--chdir", "/scratch",
        "--hostname", "sandbox",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONHASHSEED", str(hash_seed),
        "--setenv", "PYTHONPATH", "/",
        "--setenv", "HARNESS_SCRATCH", "/scratch",
        "--setenv", "HARNESS_WARM", "1" if warm else "0",
        "--setenv", "HARNESS_WIPE", "/tmp:/dev/shm",
        "--cap-drop", "ALL",
        "--remount-ro", "/",  # the root tmpfs bwrap builds the mounts on: not a place to write
        # bwrap's /dev is a tmpfs the sandbox's uid owns: a file left there would greet the
        # next run. Its nodes and /dev/shm are mounts of their own, and stay writable.
        "--remount-ro", "/dev",
        "--as-pid-1",  # the non-dumpable agent is PID 1: no bwrap init holding the host's env and pipes
        # An import, not the script's path: a module runs from its precompiled
        # bytecode, a script is compiled afresh at every start. PYTHONPATH=/ finds it.
        python, "-S", "-s", "-B", "-P", "-c", AGENT_ENTRY,
    ]  # fmt: skip


class BwrapSandbox(AgentSandbox):
    backend = "bwrap"

    def __init__(self, *, slot: int | None = None, hash_seed: int = 1, warm: bool = True) -> None:
        self.slot = next(_slots) if slot is None else slot
        self.hash_seed = hash_seed
        self.warm = warm
        self.id = f"bwrap-{uuid.uuid4().hex[:12]}"
        self.process: subprocess.Popen | None = None
        self.reader: FrameReader | None = None
        self.ready: dict[str, Any] = {}
        self.runs = 0
        self.uid_lease: UidLease | None = None
        self.uid: int | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> BwrapSandbox:
        if bwrap_path() is None:
            raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
        python = os.environ.get("SANDBOX_PYTHON", DEFAULT_PYTHON)
        command = bwrap_command(harness=str(readable_copy()), python=python, hash_seed=self.hash_seed, warm=self.warm)
        if os.geteuid() == 0:  # otherwise the sandbox runs as the caller's own uid
            self.uid_lease = lease_uid(hint=os.getpid() * 7 + self.slot)
            self.uid = self.uid_lease.uid
        # Popen drops to the sandbox's uid itself (setsid, setgroups, setgid, setuid, in
        # that order, between fork and exec): unlike a preexec_fn, nothing in Python runs
        # in the child, which is what makes it safe beside the worker's threads.
        identity = {} if self.uid is None else {"user": self.uid, "group": self.uid, "extra_groups": []}
        try:
            self.process = subprocess.Popen(
                command,
                env={"PATH": "/usr/bin:/bin"},  # bwrap itself holds none of the worker's secrets
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                **identity,
            )
        except OSError as exc:
            self.close()
            raise SandboxFailure(f"could not start bwrap: {exc}", anomaly="start_failed") from exc
        self.reader = FrameReader(self.process.stdout.fileno())
        try:
            self.ready = self.reader.read(time.monotonic() + START_TIMEOUT_S)
        except SandboxFailure as exc:
            self.close()
            raise SandboxFailure(f"the sandbox did not come up: {exc}", anomaly="start_failed") from exc
        if self.ready.get("op") != "ready" or self.ready.get("harness") != harness_version():
            self.close()
            raise SandboxFailure(f"unexpected greeting from the sandbox: {self.ready}", anomaly="start_failed")
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            self._release_uid()
            return
        try:
            if process.poll() is None:
                # Nothing in a sandbox is worth a graceful exit: killing bwrap takes its
                # PID namespace, and with it every process inside, down at once.
                try:
                    os.killpg(process.pid, 9)
                except ProcessLookupError:
                    pass
            process.wait()
        finally:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._release_uid()

    def _release_uid(self) -> None:
        # Only once the sandbox's processes are gone may another sandbox take the uid.
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None

    # -- runs ---------------------------------------------------------------------------------

    def fingerprint_parts(self) -> list[str]:
        return ["bwrap", f"scratch:{SCRATCH_BYTES}"]

    def _write(self, data: bytes) -> None:
        protocol.write_all(self.process.stdin.fileno(), data)
