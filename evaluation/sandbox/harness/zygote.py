"""The zygote: the process of a sandbox that makes solution processes.

Forked from the supervisor at start-up, before anything is read, it never reads
a test and never runs solution code. For each solution process a run needs it
forks a pristine copy of itself (or hands the run to a spare, forked ahead of
it), so a solution process inherits no test, no expected value and nothing of
an earlier run. It reports their exits to the judge, and ends each run by
killing everything the run started (it is the child subreaper) and wiping the
scratch. `Zygote` is the judge's handle on it.
"""

from __future__ import annotations

import _signal as signal  # signal.py builds enums at import: ~6 ms in a cold sandbox
import fcntl
import os
import resource
import select
import sys
import time

from . import confine, lite, memory_limit, protocol, resources, scratch, solution

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

PR_SET_CHILD_SUBREAPER = 36
IN_FD, OUT_FD = 0, 1  # the host's channel: the supervisor's (the judge's) alone


# -- becoming a solution process -----------------------------------------------------------


def _prepare_solution() -> int:
    """The part of becoming a solution process that no run decides: done by a spare
    while it waits, so a run does not wait for it (nor for the pages it touches).
    Returns a descriptor of /dev/null, kept out of the way of the run's."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    os.chdir(scratch.RUN_DIR)
    os.environ.clear()
    run_dir = scratch.RUN_DIR
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": run_dir, "TMPDIR": run_dir, "LANG": "C.UTF-8"})
    sys.argv = ["solution.py"]
    return fcntl.fcntl(os.open(os.devnull, os.O_RDONLY), fcntl.F_DUPFD, 100)


def _solution_child(seed: int, limits: dict[str, Any], mode: str, fds: list[int], devnull: int) -> None:
    """In the solution process, once its run is known: wire the judge's descriptors,
    shed everything else the zygote holds, apply the limits, become the candidate."""
    # Move the descriptors out of the way first: dup2 into 0-3 must never
    # overwrite one that is still to be moved (their numbers vary run to run).
    high = [os.dup(fd) if fd >= 100 else fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
    *high, source_fd = high  # the judge pipes the solution's source in, last
    source = _read_all(source_fd)
    if mode == "exec":  # another language's program (program.py): exec its command
        order = lite.loads(source)
        # A built program comes first, opened by the judge where the scratch is exec.
        exe = high.pop(0) if order.get("exe") else None
        stdin, out, err = high if len(high) == 3 else (devnull, *high)
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        if exe is not None:
            exe = os.dup2(exe, 3, inheritable=False)  # closed by the exec itself
        os.closerange(3 if exe is None else 4, 65536)
        _exec_program(order, limits, exe)
    if mode == "program":
        stdin, out, err = high
        chan = None
    else:
        chan_fd, out, err = high
        stdin = devnull
        os.dup2(chan_fd, 3)
        chan = 3
    os.dup2(stdin, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(4 if chan else 3, 65536)
    solution.seed_random(seed, source)
    resources.limit_solution(limits)
    try:
        if mode == "program":
            solution.run_program(source)
        else:
            solution.serve_calls(lite.Socket(fileno=3), source)
    except MemoryError:
        os._exit(resources.MEMORY_EXIT)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _exec_program(order: dict[str, Any], limits: dict[str, Any], exe: int | None = None) -> None:
    """Become the program `order` names, under the run's limits (never returns): the
    file open as `exe` where given (a built program), else its command's first word."""
    import errno

    argv = [str(a) for a in order["argv"]]
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in (order.get("env") or {}).items()})
    # In a memory cgroup (memory_limit.py) that is the limit: no address-space or data
    # limit to break the runtimes that reserve far more than they touch.
    memory = "cgroup" if limits.get("memory_cgroup") else str(order.get("memory") or "as")
    resources.limit_solution(limits, memory=memory, overhead_mb=int(order.get("memory_overhead_mb") or 0))
    try:
        os.execve(argv[0] if exe is None else exe, argv, env)  # noqa: S606 - the program's command, from the host's language table
    except OSError as exc:
        os.write(2, f"cannot start {argv[0]}: {exc.strerror}\n".encode())
        os._exit(resources.MEMORY_EXIT if exc.errno == errno.ENOMEM else 127)


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks).decode("utf-8", errors="replace")
        chunks.append(chunk)


# -- ending a run --------------------------------------------------------------------------


def _descendants() -> set[int]:
    """Every process below the zygote. As the child subreaper it gets the orphans
    of a run back, so a daemonised grandchild is still one of these."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in found}
        found |= frontier
    return found


def _reap_all() -> list[tuple[int, int, Any]]:
    reaped = []
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reaped.append((pid, status, usage))
    return reaped


def _close_all_but(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep):
        if low < fd:  # os.closerange(n, n) would close everything from n up (close_range with high = n - 1)
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _children() -> set[int]:
    """The zygote's living children, from the kernel's own list."""
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids.update(int(p) for p in handle.read().split())
        except OSError:
            return _descendants()  # kernels without the children file
    return pids


def _end_run(run: resources.Run, judge_pid: int | None) -> int:
    """Kill the run's judge and solution processes and everything they started.

    The zygote is the child subreaper, so whatever a run left behind becomes a
    child of the zygote once its parent dies; killing children until there
    are none leaves nothing alive. Returns how many were not the run's own.
    """
    own = set(run.solutions) | ({judge_pid} if judge_pid else set())
    for pid in run.solutions:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    strays = 0
    for _ in range(200):
        alive = _children()
        if not alive:
            break
        strays += len(alive - own)
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in alive:
            try:
                _, status, usage = os.wait4(pid, 0)
            except ChildProcessError:
                continue
            if pid in run.solutions:
                run.solutions.discard(pid)
                resources.exit_info(run, pid, status, usage)
        own = set()
    _reap_all()
    return strays


# -- starting solution processes, and spares -----------------------------------------------


def _spawn_solution(run: resources.Run, mode: str, fds: list[int], spare: Spare | None) -> int:
    """Start a solution process for `run`: hand the fds to the spare if there is one
    (forked while no run was going, so the fork is off the run's path), else fork."""
    seed, limits = int(run.spec["seed"]), run.limits
    if run.memory is not None:
        limits = {**limits, "memory_cgroup": True}
    pid = spare.hand_over(seed, limits, mode, fds) if spare is not None else None
    if pid is None:
        pid = os.fork()
        if pid == 0:
            try:
                _solution_child(seed, limits, mode, fds, _prepare_solution())
            finally:
                os._exit(1)
    for fd in fds:
        os.close(fd)
    run.solutions.add(pid)
    run.spawned += 1
    if run.memory is not None:
        run.memory_marks[pid] = run.next_marks
    return pid


class Spare:
    """A solution process forked ahead of the next run, waiting for its run's seed,
    limits and descriptors. It is forked after a run has ended and everything that
    run started is dead, and used by the next run's first spawn, before any of that
    run's code runs: no candidate ever gets to touch it before it is theirs."""

    def __init__(self) -> None:
        self.sock, child_end = lite.socketpair(lite.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                signal.set_wakeup_fd(-1)  # the zygote's, about to be closed here
                self.sock.close()
                _close_all_but({0, 1, 2, child_end.fileno()})
                _spare_main(child_end)
            finally:
                os._exit(1)
        child_end.close()

    def hand_over(self, seed: int, limits: dict[str, Any], mode: str, fds: list[int]) -> int | None:
        message = lite.dumps({"seed": seed, "limits": limits, "mode": mode}).encode()
        try:
            lite.send_fds(self.sock, [message], fds)
        except OSError:  # it died (it never ran anything): fork one instead
            self.discard()
            return None
        self.sock.close()
        return self.pid

    def discard(self) -> None:
        """Kill an unused spare and reap it, so the run's accounting never sees it."""
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def rehearse_solution(devnull: int) -> Iterator[None]:
    """Walk, with a throwaway pipe and source, the path a solution process takes once
    its run is known (see solution.REHEARSAL_SOURCE for why); it changes nothing a
    run can see. A generator, paused between steps: see _spare_main. (The zygote's
    own share of a run, rehearsed the same way, saved nothing measurable and cost
    0.3 ms of CPU per run: it is not.)"""
    source_r, source_w = os.pipe()
    os.write(source_w, solution.REHEARSAL_SOURCE.encode())
    os.close(source_w)
    high = [os.dup(source_r), fcntl.fcntl(source_r, fcntl.F_DUPFD, 100)]
    os.close(source_r)
    source = _read_all(high[-1])
    os.dup2(devnull, high[0])
    for fd in high:
        os.close(fd)
    for limit in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE,
                  resource.RLIMIT_CORE, resource.RLIMIT_NPROC):  # fmt: skip
        resource.getrlimit(limit)
    yield
    yield from solution.rehearse(source)


def _rehearse_until_called(devnull: int, sock: lite.Socket) -> None:
    """Rehearse step by step, and stop as soon as the run's order is waiting: under a
    steady stream of runs the next one often comes before a rehearsal would end, and
    it must not wait for it. A rehearsal that fails costs only the time it was to save
    (a descriptor it left open goes with all others in _solution_child's closerange)."""
    steps = rehearse_solution(devnull)
    try:
        for _ in steps:
            if select.select([sock], [], [], 0)[0]:
                break
    except Exception:  # noqa: S110 - see the docstring
        pass
    finally:
        steps.close()


def _spare_main(sock: lite.Socket) -> None:
    devnull = _prepare_solution()
    _rehearse_until_called(devnull, sock)
    try:
        data, fds, _flags, _addr = lite.recv_fds(sock, 65536, 8)
    except OSError:
        os._exit(0)
    if not data:  # the zygote is gone
        os._exit(0)
    sock.close()
    order = lite.loads(data)
    _solution_child(int(order["seed"]), order["limits"], order["mode"], fds, devnull)


# -- the zygote ----------------------------------------------------------------------------


def zygote_main(ctl: lite.Socket, spec_fd: int) -> None:
    """Serve the judge: start solution processes, report their exits, and end
    each run by killing everything it started. Never reads a test."""
    memory = memory_limit.from_environment()
    if memory is not None:  # before anything is forked: every solution process is born in it
        memory.enter()
    noexec = confine.noexec_paths()
    if noexec:  # before anything is forked: every solution process inherits the view
        confine.enter_noexec(noexec)
    lite.prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run come back here to be killed
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_r, False)
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    run: resources.Run | None = None
    # Forked at once, cold sandbox or warm: it readies itself on a spare core while
    # the judge reads the run.
    spare: Spare | None = Spare()
    while True:
        ready, _, _ = select.select([ctl, wakeup_r], [], [])
        if wakeup_r in ready:
            try:
                os.read(wakeup_r, 4096)
            except BlockingIOError:
                pass
            for pid, status, usage in _reap_all():
                if run is not None and pid in run.solutions:
                    run.solutions.discard(pid)
                    _send_quietly(ctl, resources.exit_info(run, pid, status, usage))
        if ctl not in ready:
            continue
        try:
            data, fds, _flags, _addr = lite.recv_fds(ctl, 65536, 8)
        except OSError:
            data, fds = b"", []
        if not data:  # the judge is gone: take everything down with us
            if spare is not None:
                spare.discard()
            if run is not None:
                _end_run(run, None)
            os._exit(0)
        message = lite.loads(data)
        op = message.get("op")
        if op == "begin":  # the scratch was wiped when the last run ended
            run = resources.Run(protocol.receive(spec_fd))
            if memory is not None:
                memory_limit.begin(run, memory)
        elif op == "spawn" and run is not None:
            refused = memory_limit.limit_spawn(run, message)
            if refused:
                for fd in fds:
                    os.close(fd)
                _send_quietly(ctl, {"op": "spawned", "pid": 0, "error": refused})
                continue
            pid = _spawn_solution(run, message["mode"], fds, spare)
            spare = None
            _send_quietly(ctl, {"op": "spawned", "pid": pid})
        elif op == "ping":
            _send_quietly(ctl, {"op": "pong"})
        elif op == "kill" and run is not None:
            pid = int(message["pid"])
            if pid in run.solutions:
                for target in (-pid, pid):  # its process group first: it called setsid
                    try:
                        os.kill(target, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        elif op == "end" and run is not None:
            if spare is not None:  # the run started no solution process
                spare.discard()
            strays = _end_run(run, None)
            scratch.wipe()
            _send_quietly(ctl, {"op": "ended", "cpu_s": round(run.cpu_s, 6), "peak_memory_kb": run.peak_kb,
                                "solution_processes": run.spawned, "solution_exit": run.last_exit,
                                "leftover_processes": strays})  # fmt: skip
            run = None
            if os.environ.get("HARNESS_WARM", "1") == "1":
                spare = Spare()  # after the reply: the next run is not kept waiting for it
        else:
            for fd in fds:
                os.close(fd)


def _send_quietly(ctl: lite.Socket, message: dict[str, Any]) -> None:
    try:
        ctl.send(lite.dumps(message).encode())
    except OSError:
        pass


class Zygote:
    """The judge's handle on its zygote."""

    def __init__(self) -> None:
        self.ctl, zygote_end = lite.socketpair(lite.SOCK_SEQPACKET)
        spec_r, self.spec_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.ctl.close()
                os.close(self.spec_w)
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, IN_FD)  # the host's channel is the judge's alone
                os.dup2(devnull, OUT_FD)
                _close_all_but({IN_FD, OUT_FD, 2, zygote_end.fileno(), spec_r} | memory_limit.descriptors())
                zygote_main(zygote_end, spec_r)
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(1)
        zygote_end.close()
        os.close(spec_r)

    def alive(self) -> bool:
        """Whether the zygote still runs, neither dead nor stopped (it is our child:
        one non-blocking wait tells both)."""
        try:
            pid, _status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return False
        return pid == 0

    def begin(self, spec: dict[str, Any]) -> None:
        """Start a run. The solution's source never goes to the zygote (the judge
        pipes it to each solution process): what the zygote once held, even freed,
        every later fork would carry, and no run may find another's solution. Nor does
        its program (another language's files: the judge lays them out), which would
        also outgrow the pipe the spec goes through before the zygote reads it."""
        protocol.send(self.spec_w, {key: value for key, value in spec.items() if key not in ("solution", "program")})
        self.ctl.send(lite.dumps({"op": "begin"}).encode())

    def end(self, timeout: float = 10.0) -> dict[str, Any]:
        """Have the zygote kill what the run started; returns its accounting."""
        self.ctl.send(lite.dumps({"op": "end"}).encode())
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.ctl], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ZygoteGone("the zygote did not end the run")
            data = self.ctl.recv(65536)
            if not data:
                raise ZygoteGone("the zygote died")
            message = lite.loads(data)
            if message.get("op") == "ended":
                return message


class ZygoteGone(Exception):
    pass
