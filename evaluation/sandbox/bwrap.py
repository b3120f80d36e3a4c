"""The bubblewrap backend: each sandbox is one `bwrap` process holding a warm supervisor.

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
import signal
import subprocess
import uuid
from typing import Any, NamedTuple

from evaluation.sandbox import memory_cgroups
from evaluation.sandbox.base import SupervisorSandbox
from evaluation.sandbox.channel import FrameReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import protocol
from evaluation.sandbox.harness_files import SUPERVISOR_ENTRY, readable_copy
from evaluation.sandbox.languages import RUNTIME_ETC
from evaluation.sandbox.memory_cgroups import SandboxCgroup
from evaluation.sandbox.uids import UidLease, lease_uid

DEFAULT_PYTHON = "/usr/bin/python3"  # Debian's, with python3-pytest: the same userland as the image
SCRATCH_BYTES = 256 * 1024 * 1024
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
_slots = itertools.count()


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def system_arguments(harness: str) -> list[str]:
    """What every bwrap sandbox here starts with: new user, PID, network, IPC, UTS and
    cgroup namespaces, death with its parent, a session of its own, the read-only
    system (/usr only) and the harness."""
    return [
        bwrap_path() or "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--ro-bind", harness, "/harness",
    ]  # fmt: skip


def bwrap_command(*, harness: str, python: str, hash_seed: int, warm: bool = True, template: bool = False) -> list[str]:
    return [
        *system_arguments(harness),
        # The few /etc directories a language's runtime reads its configuration from
        # (languages.py: the JVM's, Mono's), where installed; the rest of /etc stays out.
        *[arg for path in RUNTIME_ETC if os.path.isdir(path) for arg in ("--ro-bind", path, path)],
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
        # Where solution processes may write but never execute (harness/confine.py).
        "--setenv", "HARNESS_NOEXEC", "/scratch:/tmp:/dev/shm",
        # A template forks fresh sandboxes instead of serving runs (harness/fresh.py);
        # it starts as a supervisor does, so that its sandboxes' processes look the same.
        *(["--setenv", "HARNESS_TEMPLATE", "1"] if template else []),
        "--cap-drop", "ALL",
        "--remount-ro", "/",  # the root tmpfs bwrap builds the mounts on: not a place to write
        # bwrap's /dev is a tmpfs the sandbox's uid owns: a file left there would greet the
        # next run. Its nodes and /dev/shm are mounts of their own, and stay writable.
        "--remount-ro", "/dev",
        "--as-pid-1",  # the non-dumpable supervisor is PID 1: no bwrap init holding the host's env and pipes
        # An import, not the script's path: a module runs from its precompiled
        # bytecode, a script is compiled afresh at every start. PYTHONPATH=/ finds it.
        python, "-S", "-s", "-B", "-P", "-c", SUPERVISOR_ENTRY,
    ]  # fmt: skip


def sandbox_python() -> str:
    return os.environ.get("SANDBOX_PYTHON", DEFAULT_PYTHON)


class Launched(NamedTuple):
    """A started bwrap sandbox: its process, the uid it holds, and its memory cgroups."""

    process: subprocess.Popen
    uid_lease: UidLease | None
    cgroup: SandboxCgroup | None


def launch(command: list[str], *, slot: int, stdin: Any, stdout: Any, memory_cgroup: bool = True) -> Launched:
    """Start a bwrap command as the sandbox's own uid (leased here when the host runs as
    root; otherwise the caller's), holding none of the worker's environment, in memory
    cgroups of its own where the host can make them (memory_cgroups.py) and the command
    runs the supervisor (`memory_cgroup`: whose zygote takes the cgroup's descriptors;
    a session's sandbox keeps its own limits and is never handed them)."""
    if bwrap_path() is None:
        raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
    lease = lease_uid(hint=os.getpid() * 7 + slot) if os.geteuid() == 0 else None
    cgroup = None
    zygote_fds: list[int] = []
    if lease is not None and memory_cgroup:
        try:
            cgroup = memory_cgroups.for_uid(lease.uid)
            memcg_env, zygote_fds = cgroup.open_for_zygote() if cgroup is not None else ("", [])
        except OSError as exc:
            lease.release()
            raise SandboxFailure(f"could not open the sandbox's memory cgroup: {exc}", anomaly="start_failed",
                                 reason="launch_failed") from exc  # fmt: skip
    if cgroup is not None:
        command = memory_cgroups.wrapped(command, cgroup, lease.uid, memcg_env)
        identity: dict[str, Any] = {}  # setpriv drops to the uid, once the shell has joined the cgroup
    else:
        # Popen drops to the sandbox's uid itself (setsid, setgroups, setgid, setuid, in
        # that order, between fork and exec): unlike a preexec_fn, nothing in Python runs
        # in the child, which is what makes it safe beside the worker's threads.
        identity = {} if lease is None else {"user": lease.uid, "group": lease.uid, "extra_groups": []}
    try:
        process = subprocess.Popen(
            command,
            env={"PATH": "/usr/bin:/bin"},  # bwrap itself holds none of the worker's secrets
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            pass_fds=zygote_fds,
            **identity,
        )
    except OSError as exc:
        if lease is not None:
            lease.release()
        raise SandboxFailure(f"could not start bwrap: {exc}", anomaly="start_failed", reason="launch_failed") from exc
    finally:
        for fd in zygote_fds:
            os.close(fd)
    return Launched(process, lease, cgroup)


def stop(process: subprocess.Popen) -> None:
    """Kill a bwrap sandbox and everything in it, and return once all of it is reaped.

    Nothing in a sandbox is worth a graceful exit. What is killed is the sandbox's
    PID 1, bwrap's child: the kernel then kills every other process of its PID
    namespace and lets it die only once they are all gone, and bwrap reaps it and
    exits. Killing bwrap instead (as this once did) left that PID 1 to die of
    bwrap's death signal, an orphan for the host's init to reap: until then a zombie
    holding a pid (and its user namespace), which a lazy init (a container's, or a
    VM agent's) let pile up until forks failed, while the sandbox's uid, released
    the moment bwrap was reaped, was handed to the next sandbox with the last one's
    processes still dying as it."""
    if process.poll() is None:
        children = _children_of(process.pid)
        for child in children:
            _kill_child(child, process.pid)
        try:
            process.wait(timeout=STOP_TIMEOUT_S if children else 0)
            return
        except subprocess.TimeoutExpired:
            pass  # no child yet (a start cut short), or bwrap would not end with it
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:  # gone, or a kernel without the children file: bwrap is killed instead
        return []


def _kill_child(pid: int, parent: int) -> None:
    """SIGKILL `pid` if it is still `parent`'s child, through a pidfd where the kernel
    has them (a pid freed meanwhile and handed to another process is not hit)."""
    pidfd = -1
    try:
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(pid)
        with open(f"/proc/{pid}/stat") as handle:
            if int(handle.read().rsplit(")", 1)[1].split()[1]) != parent:
                return
        if pidfd >= 0:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass  # it is gone already
    finally:
        if pidfd >= 0:
            os.close(pidfd)


class BwrapSandbox(SupervisorSandbox):
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
        self.memory_cgroup: SandboxCgroup | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> BwrapSandbox:
        if bwrap_path() is None:
            raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
        command = bwrap_command(harness=str(readable_copy()), python=sandbox_python(), hash_seed=self.hash_seed,
                                warm=self.warm)  # fmt: skip
        self.process, self.uid_lease, self.memory_cgroup = launch(command, slot=self.slot, stdin=subprocess.PIPE,
                                                                  stdout=subprocess.PIPE)  # fmt: skip
        self.uid = self.uid_lease.uid if self.uid_lease else None
        self.reader = FrameReader(self.process.stdout.fileno())
        self._read_greeting("the sandbox", START_TIMEOUT_S)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _exit_status(self) -> int | None:
        try:  # its channel closed: bwrap is on its way out
            status = self.process.wait(timeout=1.0) if self.process is not None else None
        except subprocess.TimeoutExpired:
            return None
        # bwrap passes on its child's end: 128 + N when the sandbox's PID 1 died of signal N.
        return -(status - 128) if status is not None and status > 128 else status

    def close(self) -> None:
        process, self.process = self.process, None
        if self.memory_cgroup is not None:
            self.memory_cgroup.close()  # its counters' descriptors (read again, they reopen)
        if process is None:
            self._release_uid()
            return
        try:
            stop(process)
        finally:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._release_uid()

    def death_evidence(self) -> tuple[str | None, str]:
        """How bwrap ended. The supervisor is PID 1 of the sandbox: no process inside can
        signal it, so whatever this says, it names no evidence against the solution."""
        process = self.process
        if process is None:
            return None, ""
        try:
            code = process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None, "bwrap still runs"
        return None, f"bwrap was killed by signal {-code}" if code < 0 else f"bwrap exited with code {code}"

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
