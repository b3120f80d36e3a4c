"""Memory cgroups for each sandbox: the limit a solution's memory is held to, and the
evidence of whose memory an OOM kill was about. (A Docker sandbox's are below its
container's own cgroup: for_container, and docker_handover.py for how its zygote gets
the descriptors; the rest of this describes bwrap's.)

An address-space limit (RLIMIT_AS) breaks the runtimes that reserve far more than
they touch (the JVM, Go, Node, rustc), and a per-process limit lets a program that
forks share out more than its limit. A memory cgroup counts what the solution's
processes really hold, together, and the kernel says when it killed one of them for
that limit. The layout, made on first use and reused for as long as the host runs
(one per sandbox uid: its lease, uids.py, gives it to one sandbox at a time):

    <base>/u<uid>/judge   bwrap, the supervisor (the judge) and the files it lays out
    <base>/u<uid>/run     the zygote and every solution process it forks

bwrap starts in `judge` (launch's shell writes its own pid there before it execs
bwrap). The zygote moves itself into `run` as it starts, through a descriptor the
host opened here, and before each solution process starts it sets `run`'s limit to
the run's memory (plus the language's overhead) over what the zygote and its spare
hold at the run's start (harness/memory_limit.py). Nothing in the sandbox can open
any other file of the hierarchy: /sys is not mounted there, and the descriptors are
the zygote's alone (closed in every solution process, which cannot ptrace it).

Blame, on the counters of both (see `host_oom_since`): an OOM kill in `run` after
`run` reached its limit is the solution's (memory_exceeded, said by the zygote);
any other OOM kill in either was the host's OOM killer (host_oom, never the
solution's failure). /proc/vmstat's host-wide count is then not needed, which with
many sandboxes failing runs for memory at once would blame the host for every one.

v1 (the memory controller on a hierarchy of its own): <base> is below the host
process's own memory cgroup, so the sandboxes stay inside whatever limits the host
was given. v2 (unified): a cgroup holding processes cannot hand the memory
controller down, so <base> is /sys/fs/cgroup/platform-sandboxes, below the root.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import weakref
from dataclasses import dataclass
from functools import lru_cache

log = logging.getLogger("evaluation.runs")
BASE_NAME = "platform-sandboxes"
V1_MOUNT = "/sys/fs/cgroup/memory"
V2_MOUNT = "/sys/fs/cgroup"
ENV = "HARNESS_MEMCG"  # how the zygote finds its descriptors (harness/memory_limit.py)


@dataclass(frozen=True)
class Counts:
    """One reading of a sandbox's OOM counters."""

    judge_kills: int
    run_kills: int
    run_limit_hits: int


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    base: str


def _mounted_version() -> int | None:
    """1 where the memory controller has a v1 hierarchy of its own, 2 where the unified
    hierarchy offers it, None where neither is mounted with it."""
    if os.path.exists(os.path.join(V1_MOUNT, "memory.limit_in_bytes")):
        return 1
    try:
        with open(os.path.join(V2_MOUNT, "cgroup.controllers")) as handle:
            return 2 if "memory" in handle.read().split() else None
    except OSError:
        return None


def _memory_cgroup_of(pid: int | str, version: int) -> str | None:
    """The memory cgroup `pid` ("self" for this process) is in, as /proc/<pid>/cgroup
    names it (relative to the hierarchy's root), or None where it names none."""
    with open(f"/proc/{pid}/cgroup") as handle:
        for line in handle:
            number, controllers, path = line.rstrip("\n").split(":", 2)
            if (version == 1 and "memory" in controllers.split(",")) or (version == 2 and number == "0"):
                return path
    return None


@lru_cache(maxsize=1)
def hierarchy() -> Hierarchy | None:
    """Where this host's sandbox cgroups go, or None where it cannot make them (not
    root, no memory controller, a read-only /sys/fs/cgroup): then bwrap sandboxes fall
    back to per-process limits and the host-wide OOM count (evidence.py)."""
    reason = _unavailable()
    if reason:
        log.warning("no memory cgroups for bwrap sandboxes: %s", reason)
        return None
    if _mounted_version() == 1:
        own = (_memory_cgroup_of("self", 1) or "/").lstrip("/")
        where = Hierarchy(1, os.path.join(V1_MOUNT, own, BASE_NAME))
    else:
        where = Hierarchy(2, os.path.join(V2_MOUNT, BASE_NAME))
    try:  # once: a read-only or foreign hierarchy says so here, not at every launch
        os.makedirs(where.base, exist_ok=True)
        if where.version == 2:
            _enable_memory(V2_MOUNT)
            _enable_memory(where.base)
    except OSError as exc:
        log.warning("no memory cgroups for bwrap sandboxes: cannot make %s (%s)", where.base, exc)
        return None
    return where


def _unavailable() -> str:
    if os.geteuid() != 0:
        return "the host does not run as root"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    if _mounted_version() is None:
        return "no memory cgroup hierarchy is mounted with the memory controller"
    return ""


def unavailable_reason() -> str:
    """Why bwrap sandboxes run without memory cgroups here ('' where they have them)."""
    if hierarchy() is not None:
        return ""
    return _unavailable() or "the sandbox cgroups could not be made"


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _enable_memory(directory: str) -> None:
    """v2: let `directory`'s children have memory limits of their own."""
    with open(os.path.join(directory, "cgroup.subtree_control")) as handle:
        if "memory" in handle.read().split():
            return
    _write(os.path.join(directory, "cgroup.subtree_control"), "+memory")


class SandboxCgroup:
    """The two cgroups of one sandbox: below its uid's directory (bwrap), or below its
    container's own memory cgroup (Docker: for_container)."""

    def __init__(self, version: int, path: str) -> None:
        self.version = version
        self.path = path
        self.judge = os.path.join(self.path, "judge")
        self.run = os.path.join(self.path, "run")
        # The counter files, opened once and read with pread: each run reads them twice,
        # and opening four files each time cost about 0.3 ms of a 3 ms run.
        self._counters: dict[str, int] = {}
        weakref.finalize(self, _close_all, self._counters)

    def make(self, pid: int = 0) -> SandboxCgroup:
        """Make both (and move `pid`, a container's PID 1, into `judge`: v2 lets a
        cgroup hand the memory controller down only once no process is in it)."""
        os.makedirs(self.path, exist_ok=True)
        for directory in (self.judge, self.run):
            os.makedirs(directory, exist_ok=True)
        if pid:
            _write(self.judge_procs(), str(pid))
        if self.version == 2:
            _enable_memory(self.path)
        # No swapping the solution's memory out from under its limit: a host with swap
        # would otherwise let a run hold more than it is allowed, and slowly.
        if self.version == 1:
            _write(os.path.join(self.run, "memory.swappiness"), "0")
        elif os.path.exists(os.path.join(self.run, "memory.swap.max")):
            _write(os.path.join(self.run, "memory.swap.max"), "0")
        return self

    # -- what the sandbox is given ---------------------------------------------------------

    def judge_procs(self) -> str:
        return os.path.join(self.judge, "cgroup.procs")

    def open_for_zygote(self) -> tuple[str, list[int]]:
        """The descriptors the zygote is given (zygote_descriptors), and the value of
        HARNESS_MEMCG that names them. The caller closes them once bwrap has them."""
        fds = self.zygote_descriptors()
        value = f"v{self.version}:" + ",".join(f"{key}={fd}" for key, fd in fds.items())
        return value, list(fds.values())

    def zygote_descriptors(self) -> dict[str, int]:
        """The files of `run` the zygote is given (harness/memory_limit.py), open, by the
        key HARNESS_MEMCG names each by. The caller closes them once they are passed on."""
        names = {"procs": "cgroup.procs"}
        if self.version == 1:
            names.update(limit="memory.limit_in_bytes", events="memory.oom_control", hits="memory.failcnt")
        else:
            names.update(limit="memory.max", events="memory.events")
        names["stat"] = "memory.stat"
        fds: dict[str, int] = {}
        try:
            for key, name in names.items():
                flags = os.O_WRONLY if key in ("procs", "limit") else os.O_RDONLY
                fd = os.open(os.path.join(self.run, name), flags)
                # Above the numbers a sandbox's PID 1 wires its channel to (0-3: fresh.py).
                fds[key] = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
                os.close(fd)
        except OSError:
            for fd in fds.values():
                os.close(fd)
            raise
        return fds

    # -- evidence --------------------------------------------------------------------------

    def counts(self) -> Counts:
        judge_kills, _ = self._kills_and_hits(self.judge)
        run_kills, run_hits = self._kills_and_hits(self.run)
        return Counts(judge_kills, run_kills, run_hits)

    def _read(self, path: str) -> str:
        fd = self._counters.get(path)
        if fd is None:
            fd = self._counters[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(fd, 4096, 0).decode()

    def _kills_and_hits(self, directory: str) -> tuple[int, int]:
        """(OOM kills, times the limit was reached) of one cgroup. v1 counts limit hits
        in memory.failcnt; v2's memory.events counts each OOM of the cgroup's own limit
        as `oom`."""
        if self.version == 1:
            text = self._read(os.path.join(directory, "memory.oom_control"))
            fields = dict(line.split() for line in text.splitlines() if line.strip())
            hits = self._read(os.path.join(directory, "memory.failcnt")).strip()
            return int(fields.get("oom_kill", 0)), int(hits or 0)
        text = self._read(os.path.join(directory, "memory.events"))
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields.get("oom_kill", 0)), int(fields.get("oom", 0))

    def close(self) -> None:
        """Close the counters' descriptors (a sandbox's end: its cgroups may go with it)."""
        _close_all(self._counters)

    def host_oom_since(self, before: Counts) -> str:
        """What says the host's OOM killer struck this sandbox since `before` ('' where
        nothing does): a kill in `judge`, which has no limit of its own, or a kill in
        `run` while `run` never reached its limit. A kill after the limit was reached is
        the solution's, and the zygote reports it as memory_exceeded."""
        try:
            now = self.counts()
        except OSError as exc:
            if not os.path.isdir(self.path):
                # Gone with its sandbox (a Docker container's, removed by the engine once
                # its PID 1 ended): the sandbox's other evidence decides (death_evidence).
                return ""
            return f"the sandbox's memory cgroup could not be read ({exc})"
        if now.judge_kills > before.judge_kills:
            return "the host's OOM killer killed the sandbox's judge"
        if now.run_kills > before.run_kills and now.run_limit_hits == before.run_limit_hits:
            return "the host's OOM killer killed a solution process below its memory limit"
        return ""

    def leftover_processes(self) -> int:
        """Processes still in either cgroup (after the sandbox stopped: none)."""
        total = 0
        for directory in (self.judge, self.run):
            try:
                with open(os.path.join(directory, "cgroup.procs")) as handle:
                    total += len(handle.read().split())
            except OSError:
                pass
        return total


def _close_all(counters: dict[str, int]) -> None:
    while counters:
        _path, fd = counters.popitem()
        try:
            os.close(fd)
        except OSError:
            pass


def for_uid(uid: int) -> SandboxCgroup | None:
    """The cgroups of the sandbox that holds `uid`, made if need be; None where this
    host has none (hierarchy()). Raises OSError where it has them but cannot make
    these: the sandbox must not start with other limits than its peers."""
    where = hierarchy()
    if where is None:
        return None
    return SandboxCgroup(where.version, os.path.join(where.base, f"u{uid}")).make()


def for_container(pid: int) -> SandboxCgroup | None:
    """The cgroups of the Docker container whose PID 1 is `pid` (its supervisor, the only
    process it has yet), made below the container's own memory cgroup, which holds the
    container's limit over both, with `pid` moved into `judge`. None where this host
    makes no memory cgroups (not root, no memory controller); OSError where it should
    and cannot, as for_uid."""
    version = _mounted_version() if os.geteuid() == 0 else None
    if version is None:
        return None
    path = _memory_cgroup_of(pid, version)
    if path is None:
        raise OSError(f"process {pid} is in no memory cgroup")
    if path.startswith("/.."):  # outside this process's cgroup namespace: not reachable from here
        raise OSError(f"the container's cgroup {path} is outside this host process's cgroup namespace")
    mount = V1_MOUNT if version == 1 else V2_MOUNT
    return SandboxCgroup(version, os.path.join(mount, path.lstrip("/"))).make(pid)


def wrapped(command: list[str], cgroup: SandboxCgroup, uid: int, memcg_env: str) -> list[str]:
    """`command` (bwrap's) started in the sandbox's `judge` cgroup as `uid`: a shell,
    still root, writes its own pid there, then setpriv drops to the uid and execs bwrap
    (the same process throughout, so the host's handle on it is bwrap's). The zygote's
    descriptors are named to it by HARNESS_MEMCG, set inside (bwrap clears the rest)."""
    at = command.index("--clearenv") + 1 if "--clearenv" in command else 1  # bwrap applies them in order
    command = [*command[:at], "--setenv", ENV, memcg_env, *command[at:]]
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.judge_procs(),
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *command]  # fmt: skip
