"""Fresh sandboxes forked from a template, at the cost of a fork instead of an exec.

A cold sandbox started by exec pays for bwrap (~7 ms), a new interpreter and the
harness's imports before anything runs: twice a bare `python3` spawn. The template
is a bwrap sandbox like any other that has imported the supervisor and the modules a
warm sandbox holds, and never does anything else: it runs no candidate code, reads
no test and holds no run's descriptor past a fork. For each fresh sandbox it forks
a child that enters new user, mount, PID, network, IPC, UTS and cgroup namespaces,
and that child's own child, PID 1 there, mounts its own /proc and a new tmpfs on
/scratch, /tmp and /dev/shm, drops every capability the new user namespace gave
it, sets no_new_privs and becomes a supervisor on the descriptors the host sent.

What a run inside sees is what a sandbox started by exec shows: the same read-only
system and /dev, empty writable places, its supervisor as PID 1, a /proc of its own
processes only, a loopback-only network, no capabilities. What it shares with the
template is the template's user namespace (so its uid) and the template's memory
image, which no candidate ever touched. The host gives a template one fresh
sandbox at a time, so per-uid limits still bind one run's processes alone; ending
a sandbox kills its PID 1, which takes its whole PID namespace down.

Control messages (one SOCK_SEQPACKET packet each, on fd 0, JSON):
  host -> template  {"op": "fresh"} with the sandbox's stdin and stdout (SCM_RIGHTS), and
                    optionally a third: the sandbox's peer (an interactive run's other side,
                    harness/suite_interactive.py), which its supervisor keeps as fd 3
  template -> host  {"op": "forked", "id": N} or {"op": "error", "message": ...}
  host -> template  {"op": "kill", "id": N}   ->   {"op": "killed", "id": N}
A sandbox that cannot set itself up says so on its stdout: {"op": "setup_failed"}.
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import sys

from harness import confine, lite, memory_limit, protocol, scratch, supervisor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
SIGKILL = 9
# The sandbox's writable places, each a new tmpfs (sizes as bwrap.py gives the template's).
TMPFS = (("/scratch", 256 * 1024 * 1024), ("/tmp", 16 * 1024 * 1024), ("/dev/shm", 1024 * 1024))  # noqa: S108
# What bwrap's --proc makes read-only in a sandbox's /proc, done the same way here.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
REPORT_TIMEOUT_S = 10.0
IN_FD, OUT_FD = 0, 1
PEER_FD = 3  # an interactive run's other side, when the host sent one (suite_interactive.py)


def entry() -> None:
    """What a template runs: supervisor.entry() with HARNESS_TEMPLATE=1."""
    try:
        template_main(lite.Socket(fileno=IN_FD))
    except OSError:
        os._exit(1)  # the host is gone: so is everything below us, with bwrap's PID namespace


def template_main(ctl: lite.Socket) -> None:
    lite.prctl(supervisor.PR_SET_DUMPABLE, 0)  # inherited by every fork: no ptrace, no /proc/<pid>/mem
    for name in supervisor.WARM_MODULES:  # what a warm sandbox holds, so its runs and ours see the same
        __import__(name)
    before = set(sys.modules)
    supervisor.harness_version()  # computed once here (it is cached), not in every sandbox...
    for name in set(sys.modules) - before:  # ...and what it imported is not in their processes,
        del sys.modules[name]  # which a warm sandbox's fork before it ever computes it
    gc.collect()
    gc.freeze()
    ctl.send(lite.dumps({"op": "ready", "harness": supervisor.harness_version(), "pid": os.getpid()}).encode())
    children: dict[int, int] = {}  # first child -> the sandbox's PID 1 (as this namespace numbers it)
    while True:
        message, fds = next_request(ctl)
        op = message.get("op")
        if op == "fresh" and len(fds) in (2, 3) and not children:
            reply = _fork_sandbox(ctl, fds, children)
        elif op == "kill":
            reply = _kill_sandbox(int(message.get("id", 0)), children)
        else:
            for fd in fds:
                os.close(fd)
            reply = {"op": "error", "message": f"refused {op!r} ({len(children)} sandbox(es) running)"}
        ctl.send(lite.dumps(reply).encode())


def next_request(ctl: lite.Socket) -> tuple[dict[str, Any], list[int]]:
    """The host's next control message and the descriptors it sent with it; ends this
    process when the host has gone (its end of the channel closed)."""
    try:
        data, fds, _flags, _addr = lite.recv_fds(ctl, 65536, 8)
    except OSError:
        data, fds = b"", []
    if not data:
        os._exit(0)
    return lite.loads(data), fds


def _fork_sandbox(ctl: lite.Socket, fds: list[int], children: dict[int, int], init: Any = None) -> dict[str, Any]:
    """Fork a sandbox whose PID 1 runs `init(fds)` (a supervisor's, by default) and
    record it in `children`; the reply names it by its first child's pid."""
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            ctl.close()
            os.close(report_r)
            _first_child(fds, report_w, init or _sandbox_init)
        finally:
            os._exit(1)
    os.close(report_w)
    for fd in fds:
        os.close(fd)
    init = 0
    try:
        if select.select([report_r], [], [], REPORT_TIMEOUT_S)[0]:
            init = int(os.read(report_r, 64) or b"0")
    except ValueError:
        init = 0
    finally:
        os.close(report_r)
    children[pid] = init
    return {"op": "forked", "id": pid}


def _kill_sandbox(pid: int, children: dict[int, int]) -> dict[str, Any]:
    """Kill a sandbox's PID 1 (the kernel then kills its whole PID namespace) and the
    child above it, and reap until nothing is left below the template."""
    if pid not in children:
        return {"op": "error", "message": f"no sandbox {pid}"}
    for target in (children.pop(pid), pid):
        if target > 0:
            try:
                os.kill(target, SIGKILL)
            except ProcessLookupError:
                pass
    while True:  # the sandbox's PID 1 comes back to us (we are PID 1 here) once its parent is gone
        try:
            os.wait()
        except ChildProcessError:
            break
    return {"op": "killed", "id": pid}


def _first_child(fds: list[int], report_w: int, init: Any) -> None:
    """Enter the new namespaces and fork the sandbox's PID 1; stay as its parent, so
    that killing either takes the sandbox down (PID 1 dies with us: PDEATHSIG)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        # A process writes its own uid_map only while dumpable (otherwise /proc/self is
        # not its own). Nothing here can reach this child: no run's process shares
        # our PID namespace or our uid, and it is not dumpable again before it forks.
        lite.prctl(supervisor.PR_SET_DUMPABLE, 1)
        lite.check(lite.libc("unshare", "i")(NAMESPACES), "unshare")
        confine.write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        confine.write_file("/proc/self/setgroups", "deny")
        confine.write_file("/proc/self/gid_map", f"{gid} {gid} 1")
        lite.prctl(supervisor.PR_SET_DUMPABLE, 0)
    except OSError as exc:
        _setup_failed(fds, f"entering new namespaces: {exc}", exc.errno)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_w)
            init(fds)
        finally:
            os._exit(1)
    os.write(report_w, str(pid).encode())
    os.close(report_w)
    for fd in fds:
        os.close(fd)
    os.waitpid(pid, 0)
    os._exit(0)


def _sandbox_init(fds: list[int]) -> None:
    """PID 1 of the new namespaces: build the sandbox, drop every privilege, serve."""
    try:
        adopt_channel(fds)
        _mount_filesystems()
        confine.drop_privileges()
        os.chdir(scratch.SCRATCH)
    except OSError as exc:
        _setup_failed([IN_FD, OUT_FD], f"building the sandbox: {exc}", exc.errno)
    # From here on this is a supervisor like any other: it serves runs, and its processes
    # hold the modules a warm sandbox's hold, this one aside.
    del os.environ["HARNESS_TEMPLATE"]
    sys.modules.pop(__name__, None)
    vars(sys.modules["harness"]).pop("fresh", None)
    supervisor.entry()  # one supervisor, as exec would start it; it returns when the host closes the channel
    os._exit(0)


def adopt_channel(fds: list[int]) -> None:
    """As a sandbox's new PID 1: die with the child above, take the host's descriptors
    as stdin and stdout (and a peer as fd 3, when sent), /dev/null as stderr, nothing
    else open, a session of its own."""
    lite.prctl(PR_SET_PDEATHSIG, SIGKILL)
    # Out of the way first: a target number may be one of the descriptors still to move.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
    for fd, target in zip(moved, (IN_FD, OUT_FD, PEER_FD)[: len(moved)], strict=True):
        os.dup2(fd, target)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    # The template's memory cgroup descriptors go on to this sandbox's zygote (memory_limit.py).
    keep = {0, 1, 2, *([PEER_FD] if len(fds) >= 3 else [])} | memory_limit.descriptors()
    low = 0
    for fd in sorted(keep):
        if low < fd:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)
    os.setsid()


def _mount_filesystems(tmpfs: tuple[tuple[str, int], ...] = TMPFS) -> None:
    mount = lite.libc("mount", "z", "z", "z", "L", "z")
    lite.check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making the mounts private")
    # Our own PID namespace's /proc: the template and everything outside are not in it.
    lite.check(mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mounting /proc")
    for name in PROC_READ_ONLY:
        path = f"/proc/{name}".encode()
        if os.path.exists(path):
            lite.check(mount(path, path, None, MS_BIND | MS_REC, None), f"binding /proc/{name}")
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
            lite.check(mount(None, path, None, flags, None), f"making /proc/{name} read-only")
    for path, size in tmpfs:
        options = f"size={size},mode=0755".encode()
        lite.check(mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"mounting {path}")


def _setup_failed(fds: list[int], detail: str, errno: int | None) -> None:
    try:
        protocol.send(fds[1], {"op": "setup_failed", "detail": detail, "errno": errno or 0})
    finally:
        os._exit(1)
