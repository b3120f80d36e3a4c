"""PID 1 of a session family's sandbox: forks the family's sessions, and nothing else.

A family is a session and the forks made from it (a GRPO group: one prepared episode,
G copies). Its sandbox is one bwrap process holding this warm interpreter, which has
imported the session supervisor and never runs a step, reads a test or holds an
episode's descriptor past a fork. Each session of the family is a child of it in new
user, mount, PID, network, IPC, UTS and cgroup namespaces (fresh.py builds them, as it
does for fresh check sandboxes), whose PID 1 mounts its own /proc, a new devpts, a
new size-bounded tmpfs on /repo and new ones on /tmp and /dev/shm, drops every
capability and becomes that session's supervisor on the descriptors the host sent.

So a fork costs a fork of this interpreter and the tree laid out in memory, not a
bwrap, an interpreter and the harness's imports. Sessions of a family share this
sandbox's uid, its read-only /base and system, and nothing else: each sees only its
own processes, files and terminals, and since Linux 5.14 the per-uid limits
(RLIMIT_NPROC above all) count each user namespace's processes apart, so one
session's fork bomb does not starve its siblings.

Control messages (one SOCK_SEQPACKET packet each, on fd 0, JSON):
  host -> family  {"op": "fresh", "tree_bytes": N} with the session's stdin and stdout (SCM_RIGHTS)
  family -> host  {"op": "forked", "id": N} or {"op": "error", "message": ...}
  host -> family  {"op": "kill", "id": N}   ->   {"op": "killed", "id": N}
A session that cannot set itself up says so on its stdout: {"op": "setup_failed"}.
"""

from __future__ import annotations

import gc
import os

from harness import confine, fresh, lite, session_exec, session_supervisor, session_tree  # noqa: F401  (warm imports)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_MEMBERS = 256
TMP_BYTES = 64 * 1024 * 1024
SHM_BYTES = 1024 * 1024
MS_NOSUID, MS_NOEXEC = 2, 8
IN_FD, OUT_FD = 0, 1
WNOHANG = os.WNOHANG


def entry() -> None:
    """What a family's sandbox runs: python3 ... -c "from harness.session_family import entry; entry()"."""
    try:
        family_main(lite.Socket(fileno=IN_FD))
    except OSError:
        os._exit(1)  # the host is gone: so is every session of the family, with bwrap's PID namespace


def family_main(ctl: lite.Socket) -> None:
    lite.prctl(session_supervisor.PR_SET_DUMPABLE, 0)  # inherited by every fork
    session_supervisor.harness_version()  # cached here once, not computed in every session
    gc.collect()
    gc.freeze()
    ctl.send(lite.dumps({"op": "ready", "harness": session_supervisor.harness_version(), "pid": os.getpid()}).encode())
    members: dict[int, int] = {}  # first child -> the session's PID 1 (as this namespace numbers it)
    exited: set[int] = set()  # children reaped before anyone asked for them
    while True:
        message, fds = fresh.next_request(ctl)
        _reap_exited(members, exited)
        op = message.get("op")
        tree_bytes = int(message.get("tree_bytes") or 0)  # never 0: a tmpfs of size=0 has no bound
        if op == "fresh" and len(fds) == 2 and len(members) < MAX_MEMBERS and tree_bytes > 0:
            reply = fresh._fork_sandbox(ctl, fds, members, init=lambda fds, size=tree_bytes: _session_init(fds, size))
            if reply.get("op") == "forked":  # pids come round again: these are not the ones reaped
                exited.discard(reply["id"])
                exited.discard(members.get(reply["id"], 0))
        elif op == "kill":
            reply = _kill_member(int(message.get("id", 0)), members, exited)
        else:
            for fd in fds:
                os.close(fd)
            reply = {"op": "error", "message": f"refused {op!r} ({len(members)} session(s) running)"}
        ctl.send(lite.dumps(reply).encode())


def _reap_exited(members: dict[int, int], exited: set[int]) -> None:
    """Collect the sessions that ended on their own (the host closed their channel)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exited.add(pid)


def _kill_member(pid: int, members: dict[int, int], exited: set[int]) -> dict[str, Any]:
    """End a session and return once nothing of it runs: kill the child above its PID 1
    (ours, so its pid cannot be another's until we reap it); the PID 1 dies with it
    (PR_SET_PDEATHSIG), and the kernel with it every process of its namespace."""
    if pid not in members:
        return {"op": "error", "message": f"no session {pid}"}
    init = members.pop(pid)
    if pid in exited:
        exited.discard(pid)  # it ended on its own, having reaped the session's PID 1 first
    else:
        try:
            os.kill(pid, fresh.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_for(pid)
    # Once that child is reaped, its orphans are ours: the session's PID 1 is among them
    # unless the child had reaped it first. Only then is `init` still the session's pid.
    if init > 0 and init in exited:
        exited.discard(init)
    elif init > 0 and _parent_of(init) == os.getpid():
        try:
            os.kill(init, fresh.SIGKILL)  # died before it set its death signal: killed here
        except ProcessLookupError:
            pass
        _wait_for(init)  # it is reapable only once every process of its namespace is gone
    return {"op": "killed", "id": pid}


def _wait_for(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _parent_of(pid: int) -> int:
    """The parent of `pid` as /proc says (0 where there is no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    return int(fields[1]) if len(fields) > 1 else 0


def _session_init(fds: list[int], tree_bytes: int) -> None:
    """PID 1 of a new session: build its filesystems, drop every privilege, supervise."""
    try:
        fresh.adopt_channel(fds)
        fresh._mount_filesystems(
            ((session_supervisor.REPO, tree_bytes), ("/tmp", TMP_BYTES), ("/dev/shm", SHM_BYTES))  # noqa: S108
        )
        _mount_devpts()
        confine.drop_privileges()
        os.chdir(session_supervisor.REPO)
    except OSError as exc:
        fresh._setup_failed([IN_FD, OUT_FD], f"building the session's sandbox: {exc}", exc.errno)
    session_supervisor.entry()  # returns when the host closes the channel
    os._exit(0)


def _mount_devpts() -> None:
    """Terminals of this session's own: a sibling's are not in it to open."""
    if not os.path.isdir("/dev/pts"):
        return
    mount = lite.libc("mount", "z", "z", "z", "L", "z")
    options = b"newinstance,ptmxmode=0666,mode=620"
    lite.check(mount(b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC, options), "mounting /dev/pts")
