"""The zygote's side of its sandbox's memory cgroup (the host's side, and the layout:
evaluation/sandbox/memory_cgroups.py).

The host opens a few files of the sandbox's `run` cgroup and names the descriptors in
HARNESS_MEMCG ("v1:procs=11,limit=12,events=13,hits=14,stat=15"; v2 has no `hits`:
its events file counts them). The zygote moves itself into `run` as it starts, so every
solution process is born there, and sets the limit before each one starts. Solution
processes never hold these descriptors: every path that becomes one closes all the
zygote's descriptors first.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

ENV = "HARNESS_MEMCG"


def descriptors() -> set[int]:
    """The descriptors HARNESS_MEMCG names: kept open by whatever hands the zygote on."""
    return set(_parse(os.environ.get(ENV, ""))[1].values())


def _parse(value: str) -> tuple[int, dict[str, int]]:
    version, _, fields = value.partition(":")
    fds = {}
    for field in fields.split(","):
        key, _, number = field.partition("=")
        if key and number.isdigit():
            fds[key] = int(number)
    return (2 if version == "v2" else 1), fds


class RunCgroup:
    """The `run` cgroup: the zygote's, and every solution process's."""

    def __init__(self, value: str) -> None:
        self.version, self.fd = _parse(value)
        self.baseline = 0  # what the zygote and its spare hold, read at each run's start
        self.written = -1

    def enter(self) -> None:
        """Move this process (the zygote, before it forks anything) into the cgroup; the
        descriptor that could move a process is closed then."""
        fd = self.fd.pop("procs")
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def begin_run(self) -> None:
        """Note what the cgroup holds with no solution process in it that the kernel
        cannot take back: the zygote's and its spare's own memory (and any tmpfs page
        still charged), none of it the solution's. Page cache is left out: earlier runs'
        reads (a compiler's, say) are charged here too, and the kernel reclaims them
        before it lets the limit fail, so counting them would raise the limit by them."""
        fields = dict(line.split() for line in os.pread(self.fd["stat"], 65536, 0).decode().splitlines() if line)
        anon = fields.get("rss" if self.version == 1 else "anon", "0")
        self.baseline = int(anon) + int(fields.get("shmem", "0"))

    def limit(self, memory_mb: int) -> None:
        """Hold the next solution process (with the others of the run) to `memory_mb`.
        Raises OSError where the kernel refuses it (EBUSY: more is in use than that)."""
        total = self.baseline + max(1, memory_mb) * 1024 * 1024
        if total != self.written:
            self.written = -1  # until the kernel took it
            os.pwrite(self.fd["limit"], str(total).encode(), 0)
            self.written = total

    def counts(self) -> tuple[int, int]:
        """(OOM kills, times the limit was reached) so far: v1's memory.failcnt, or v2's
        `oom` (an OOM of this cgroup's own limit) in memory.events."""
        fields = dict(line.split() for line in os.pread(self.fd["events"], 4096, 0).decode().splitlines() if line)
        kills = int(fields.get("oom_kill", 0))
        if self.version == 1:
            return kills, int(os.pread(self.fd["hits"], 64, 0).strip() or 0)
        return kills, int(fields.get("oom", 0))


def from_environment() -> RunCgroup | None:
    value = os.environ.get(ENV, "")
    return RunCgroup(value) if value else None


def begin(run: Any, memory: RunCgroup) -> None:
    """A run starts (resources.Run): note the cgroup's base, or why it cannot be read,
    in which case every spawn of the run is refused (limit_spawn)."""
    run.memory = memory
    try:
        memory.begin_run()
    except OSError as exc:
        run.memory_fault = f"the sandbox could not read its memory cgroup: {exc}"


def limit_spawn(run: Any, message: dict[str, Any]) -> str:
    """Set the memory cgroup's limit for the process about to start: the run's memory,
    or what the judge asks (a language's runtime overhead added). '' once it is set
    (or there is no cgroup); else why not: the run then cannot be judged here."""
    if run.memory is None or run.memory_fault:
        return run.memory_fault
    try:
        run.memory.limit(int(message.get("memory_mb") or run.limits["memory_mb"]))
        run.next_marks = run.memory.counts()  # before it can run: a kill of it counts after these
    except OSError as exc:
        return f"the sandbox could not set its memory limit: {exc}"
    return ""
