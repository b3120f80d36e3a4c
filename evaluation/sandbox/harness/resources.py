"""Resource accounting of a run's solution processes: the limits each one runs
under, and the CPU time and peak memory each one used, from the kernel's own
figures (its rusage at exit, or /proc while it lingers)."""

from __future__ import annotations

import _signal as signal  # signal.py builds enums at import: ~6 ms in a cold sandbox
import os
import resource

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

# How a solution process that ran out of memory exits (MemoryError caught at its top).
MEMORY_EXIT = 86


class Run:
    """One run: the judge, the solution processes it asked for, and their accounting."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.limits = spec["limits"]
        self.solutions: set[int] = set()
        self.cpu_s = 0.0
        self.peak_kb = 0
        self.spawned = 0
        self.last_exit: dict[str, Any] | None = None
        self.memory: Any = None  # the memory cgroup's handle (memory_limit.RunCgroup), where there is one
        self.memory_marks: dict[int, tuple[int, int]] = {}  # its counts as each solution process started
        self.next_marks = (0, 0)  # the counts read just before the next one starts
        self.memory_fault = ""  # why the run's memory cannot be limited (then nothing of it runs)


def limit_solution(limits: dict[str, Any], *, memory: str = "as", overhead_mb: int = 0) -> None:
    """Apply a run's limits to this process, a solution process about to run the candidate.
    `memory` "data" holds committed memory (RLIMIT_DATA) instead of address space, for
    runtimes that reserve far more than they use (the JVM, Go, Node), with
    `overhead_mb` more for the runtime itself (programs in other languages, program.py);
    "cgroup" sets none: the sandbox's memory cgroup holds it (memory_limit.py)."""
    cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if memory != "cgroup":
        size = (int(limits["memory_mb"]) + max(0, overhead_mb)) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA if memory == "data" else resource.RLIMIT_AS, (size, size))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["file_bytes"]), int(limits["file_bytes"])))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = int(limits["processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _killed_at_its_limit(run: Run, pid: int) -> bool:
    """Whether the kernel killed a process of the run's memory cgroup for its limit while
    `pid` lived: the limit was reached and an OOM kill followed. The process killed may
    be `pid` or one it started; either way the run's processes held more than allowed.
    (A kill while the limit was never reached was the host's: the host tells that from
    the same counters, memory_cgroups.py, and the run is rerun, never blamed.)"""
    marks = run.memory_marks.pop(pid, None)
    if run.memory is None or marks is None:
        return False
    try:
        kills, hits = run.memory.counts()
    except OSError:
        return False
    return kills > marks[0] and hits > marks[1]


def exit_info(run: Run, pid: int, status: int, usage: Any) -> dict[str, Any]:
    """The `exited` message of a reaped solution process, added to the run's accounting."""
    cpu = usage.ru_utime + usage.ru_stime
    run.cpu_s += cpu
    run.peak_kb = max(run.peak_kb, usage.ru_maxrss)
    info: dict[str, Any] = {"op": "exited", "pid": pid, "code": None, "signal": None, "cpu_s": cpu,
                            "maxrss_kb": usage.ru_maxrss}  # fmt: skip
    if os.WIFSIGNALED(status):
        info["signal"] = os.WTERMSIG(status)
    else:
        info["code"] = os.WEXITSTATUS(status)
    limit = float(run.limits["cpu_s"])
    info["cpu_exceeded"] = info["signal"] == signal.SIGXCPU or (info["signal"] == signal.SIGKILL and cpu >= limit)
    info["memory_exceeded"] = info["code"] == MEMORY_EXIT or _killed_at_its_limit(run, pid)
    run.last_exit = info
    return info


def lingering_usage(pid: int) -> dict[str, Any] | None:
    """CPU time and peak memory of a solution process that has hung up and waits to
    be ended, read from the kernel's /proc; None if it is gone (then its exit,
    reported by the zygote, is waited for instead)."""
    try:
        with open(f"/proc/{pid}/schedstat") as handle:
            cpu_s = int(handle.read().split()[0]) / 1e9
        with open(f"/proc/{pid}/status") as handle:
            status = handle.read()
    except (OSError, ValueError, IndexError):
        return None
    peak = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    if not peak or " Z " in status.split("State:", 1)[-1][:5]:
        return None  # a zombie has no memory figures left: wait for its exit
    try:
        maxrss_kb = int(peak[-1].split()[1])
    except (IndexError, ValueError):
        return None
    return {"op": "exited", "pid": pid, "code": None, "signal": None, "cpu_s": cpu_s, "maxrss_kb": maxrss_kb,
            "cpu_exceeded": False, "memory_exceeded": False, "lingering": True}  # fmt: skip
