"""One command of an agent session's step, run under the step's limits, and everything
it started killed when the step ends.

The session's supervisor is PID 1 of the sandbox's PID namespace: every process a
step starts, daemons that double-forked and called setsid included, is its
descendant or is re-parented to it. `kill(-1, SIGKILL)` from PID 1 reaches every
process of the namespace but PID 1 itself, so at the end of a step nothing the step
started survives to touch the tree later, whatever it did to hide.
"""

from __future__ import annotations

import _signal as signal
import os
import resource
import select
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHELL = "/bin/bash"
EXIT_GRACE_S = 0.05  # output a step's last processes write after its first one exits
STEP_ENV = {
    "PATH": "/opt/bin:/usr/bin:/bin",  # /opt/bin holds `python` (sessions/sandbox.py)
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PYTHONDONTWRITEBYTECODE": "1",  # bytecode caches would show up as files changed
    "PYTHONUNBUFFERED": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}


class Capture:
    """One output stream, kept as its first and last `limit / 2` bytes; the count of
    every byte is kept too, so a cut says how much it left out."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        if self.total <= kept:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        cut = self.total - kept
        marker = f"\n[... {cut} bytes cut from the middle ...]\n".encode()
        return (bytes(self.head) + marker + bytes(self.tail)).decode("utf-8", "replace")


def _limit_step(limits: dict[str, Any]) -> None:
    """In the step's first process, before exec: the step's own rlimits."""
    cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(limits["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["file_bytes"]), int(limits["file_bytes"])))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
    nproc = int(limits["processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def run_command(argv: list[str], *, cwd: str, limits: dict[str, Any], timeout_s: float,
                extra_fds: tuple[int, ...] = (), env: dict[str, str] | None = None,
                collect_fd: int | None = None, collect_limit: int = 16 << 20) -> dict[str, Any]:  # fmt: skip
    """Run `argv` as the step; return its output, exit, time and memory, once every
    process of the step is gone. `collect_fd`, the read end of a pipe whose write end is
    in `extra_fds`, is read whole alongside (at most `collect_limit` bytes) into
    the result's "collected" (bytes: the caller takes it out before sending)."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the step's first process
        try:
            os.setsid()
            devnull = os.open("/dev/null", os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            keep = {0, 1, 2, *extra_fds}
            for fd in _open_fds():
                if fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            for fd in extra_fds:
                os.set_inheritable(fd, True)
            _limit_step(limits)
            os.chdir(cwd)
            os.execve(argv[0], argv, env or STEP_ENV)  # noqa: S606 - argv, never a shell line of ours
        except BaseException:  # nothing may return into the supervisor's loop
            os._exit(127)
    os.close(out_write)
    os.close(err_write)
    for fd in extra_fds:
        os.close(fd)  # the child holds them now; a pipe must see its last writer go
    captures = {out_read: Capture(int(limits["output_bytes"])), err_read: Capture(int(limits["output_bytes"]))}
    collected = bytearray()
    deadline = started + timeout_s
    timed_out = False
    open_fds = [out_read, err_read] + ([collect_fd] if collect_fd is not None else [])
    status: int | None = None
    usage = None
    # The step is its first process: once that has exited, output still in flight gets a
    # moment, and then whatever it left running (a daemon holding the pipes) is killed.
    exit_fd = os.pidfd_open(pid)
    watched = [*open_fds, exit_fd]
    drain_until: float | None = None
    while open_fds:
        now = time.monotonic()
        if drain_until is None and now >= deadline:
            timed_out = True
            break
        if drain_until is not None and now >= drain_until:
            break
        ready, _, _ = select.select(watched, [], [], (drain_until or deadline) - now)
        for fd in ready:
            if fd == exit_fd:
                _reaped, status, usage = os.wait4(pid, 0)
                watched.remove(exit_fd)
                drain_until = time.monotonic() + EXIT_GRACE_S
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.remove(fd)
                watched.remove(fd)
            elif fd == collect_fd:
                if len(collected) + len(chunk) > collect_limit:
                    collected.clear()  # over the limit: no report at all, never half of one
                    open_fds.remove(fd)
                    watched.remove(fd)
                    collect_limit = -1
                else:
                    collected += chunk
            else:
                captures[fd].add(chunk)
    if status is None and not timed_out:
        _reaped, status, usage = os.wait4(pid, 0)  # every pipe closed: it is exiting
    os.close(exit_fd)
    elapsed = time.monotonic() - started
    cpu_s, peak_kb, late_status = kill_all(pid=pid, first_usage=usage)
    if status is None:
        status = late_status
    for fd in (out_read, err_read):
        _drain(fd, captures[fd])
        os.close(fd)
    if collect_fd is not None and collect_limit >= 0:
        rest = bytearray()
        _drain(collect_fd, rest)
        collected += rest
    exit_code, signal_number = None, None
    if status is not None:
        if os.WIFSIGNALED(status):
            signal_number = os.WTERMSIG(status)
            exit_code = 128 + signal_number
        else:
            exit_code = os.WEXITSTATUS(status)
    out, err = captures[out_read], captures[err_read]
    cpu_limit = float(limits["cpu_s"])
    return {
        "stdout": out.text(), "stderr": err.text(), "stdout_bytes": out.total, "stderr_bytes": err.total,
        "exit_code": None if timed_out else exit_code, "signal": signal_number, "timed_out": timed_out,
        "elapsed_s": round(elapsed, 6), "cpu_s": round(cpu_s, 6), "peak_memory_kb": peak_kb,
        "cpu_exceeded": signal_number == signal.SIGXCPU or (signal_number == signal.SIGKILL and cpu_s >= cpu_limit),
        **({"collected": bytes(collected) if collect_limit >= 0 else None} if collect_fd is not None else {}),
    }  # fmt: skip


def kill_all(*, pid: int | None = None, first_usage: Any = None) -> tuple[float, int, int | None]:
    """SIGKILL every process of the sandbox but this one and reap them all; return the
    CPU seconds and the peak memory (kB) of what was reaped (with `first_usage`, that
    of a process reaped before), and the wait status of `pid` if it was reaped here."""
    cpu_s, peak_kb, status = 0.0, 0, None
    if first_usage is not None:
        cpu_s += first_usage.ru_utime + first_usage.ru_stime
        peak_kb = max(peak_kb, first_usage.ru_maxrss)
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass  # nothing left to signal; children may still wait to be reaped
        try:
            reaped, reaped_status, reaped_usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu_s += reaped_usage.ru_utime + reaped_usage.ru_stime
        peak_kb = max(peak_kb, reaped_usage.ru_maxrss)
        if reaped == pid:
            status = reaped_status
    return cpu_s, peak_kb, status


def _drain(fd: int, capture: Capture | bytearray) -> None:
    """What is left in a pipe once every writer is dead."""
    os.set_blocking(fd, False)
    try:
        while chunk := os.read(fd, 1 << 16):
            if isinstance(capture, bytearray):
                capture += chunk
            else:
                capture.add(chunk)
    except BlockingIOError:
        pass


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))
