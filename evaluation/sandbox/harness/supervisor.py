"""The agent: a warm interpreter inside a sandbox, made of two processes.

- The zygote is forked at start-up, before anything is read. It never reads a
  test and never runs solution code; for each solution process a run needs,
  it forks a pristine copy of itself. So a solution process inherits no test,
  no expected value and nothing of an earlier run (modules, monkeypatches).
- The judge (this process) reads each run's tests, asks the zygote for
  solution processes, talks to them with plain data, and decides the verdict
  (judge.py). It is never forked from, so what it holds never reaches a
  solution. Between runs it restores the builtins and module table it
  started with, and the pool recycles the sandbox after a number of runs.

Run as: python3 -S -s -B -P -c "from harness.supervisor import entry; entry()"   (no site: no .pth, no sitecustomize)
Speaks length-prefixed JSON frames on fd 0 (in) and fd 1 (out); see protocol.py.
"""

from __future__ import annotations

import _signal as signal  # signal.py builds enums at import: ~6 ms in a cold sandbox
import errno
import fcntl
import gc
import os
import resource
import select
import sys
import time

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# Imported as the package `harness` (the directory's name inside and outside the
# sandbox), so no module of ours can shadow one the candidate imports.
sys.path.insert(0, os.path.dirname(HERE))
for _path in ("/usr/lib/python3/dist-packages",):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.append(_path)  # pytest for the pytest suite kind; no .pth processing

from harness import codec, judge, lite, protocol, solution  # noqa: E402,F401 - warm before forking

# Modules a candidate commonly imports: loaded once here, shared by every fork.
WARM_MODULES = (
    "math", "re", "itertools", "functools", "collections", "heapq", "bisect", "string", "random",
    "statistics", "fractions", "decimal", "typing", "dataclasses", "json", "datetime", "copy",
    "operator", "enum", "hashlib", "io", "textwrap", "unicodedata", "array", "traceback", "ast",
    "shutil",  # the zygote wipes the scratch with it: loaded late, later forks would differ
)  # fmt: skip
# Wiped between runs, so it must be named explicitly: the sandbox's private tmpfs.
SCRATCH = os.environ.get("HARNESS_SCRATCH", "")
RUN_DIR = os.path.join(SCRATCH, "run")
MEMORY_EXIT = 86
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
IN_FD, OUT_FD = 0, 1


_version: list[str] = []  # computed once a process (a template computes it for all its sandboxes)


def harness_version() -> str:
    if _version:
        return _version[0]
    try:
        from _sha256 import sha256  # the built-in one: hashlib would load OpenSSL (~3 ms)
    except ImportError:
        from hashlib import sha256
    digest = sha256()
    # The package's modules, as the host lists them (harness_files.FILES): the same digest.
    for name in sorted(n for n in os.listdir(HERE) if n.endswith(".py")):
        with open(os.path.join(HERE, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read() + b"\0")
    _version.append(digest.hexdigest())
    return _version[0]


def _prctl(option: int, value: int) -> None:
    lite.prctl(option, value)


def _pytest_version() -> str | None:
    """pytest's version without importing it (an import costs ~100 ms at start-up), and
    without `re` (~8 ms in a cold sandbox): the line `version = "X"` of its _version.py."""
    for entry in sys.path:
        try:
            with open(os.path.join(entry, "_pytest", "_version.py")) as handle:
                text = handle.read()
        except OSError:
            continue
        for line in text.splitlines():
            # `version = "X"`, or setuptools_scm's `__version__ = version = 'X'` (Debian's).
            names, equals, value = line.rpartition("=")
            if equals and {n.strip() for n in names.split("=")} & {"version", "__version__"}:
                value = value.strip()
                if len(value) > 2 and value[0] == value[-1] and value[0] in "'\"":
                    return value[1:-1]
        return None
    return None


def fingerprint() -> dict[str, Any]:
    pytest_version = _pytest_version()
    return {
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "pytest": pytest_version,
        "harness": harness_version(),
        "hash_seed": os.environ.get("PYTHONHASHSEED", "random"),
        "pid": os.getpid(),
        "uid": os.getuid(),
    }


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


def _limit_solution(limits: dict[str, Any]) -> None:
    cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(limits["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["file_bytes"]), int(limits["file_bytes"])))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = int(limits["processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _prepare_solution() -> int:
    """The part of becoming a solution process that no run decides: done by a spare
    while it waits, so a run does not wait for it (nor for the pages it touches).
    Returns a descriptor of /dev/null, kept out of the way of the run's."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    os.chdir(RUN_DIR)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": RUN_DIR, "TMPDIR": RUN_DIR, "LANG": "C.UTF-8"})
    sys.argv = ["solution.py"]
    return fcntl.fcntl(os.open(os.devnull, os.O_RDONLY), fcntl.F_DUPFD, 100)


def _solution_child(seed: int, limits: dict[str, Any], mode: str, fds: list[int], devnull: int) -> None:
    """In the solution process, once its run is known: wire the judge's descriptors,
    shed everything else the agent holds, apply the limits, become the candidate."""
    # Move the descriptors out of the way first: dup2 into 0-3 must never
    # overwrite one that is still to be moved (their numbers vary run to run).
    high = [os.dup(fd) if fd >= 100 else fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
    *high, source_fd = high  # the judge pipes the solution's source in, last
    source = _read_all(source_fd)
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
    _seed_random(seed, source)
    _limit_solution(limits)
    try:
        if mode == "program":
            solution.run_program(source)
        else:
            solution.serve_calls(lite.Socket(fileno=3), source)
    except MemoryError:
        os._exit(MEMORY_EXIT)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks).decode("utf-8", errors="replace")
        chunks.append(chunk)


def _descendants() -> set[int]:
    """Every process below the agent. As the child subreaper it gets the orphans
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
    """The agent's living children, from the kernel's own list."""
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids.update(int(p) for p in handle.read().split())
        except OSError:
            return _descendants()  # kernels without the children file
    return pids


def _end_run(run: Run, judge_pid: int | None) -> int:
    """Kill the run's judge and solution processes and everything they started.

    The agent is the child subreaper, so whatever a run left behind becomes a
    child of the agent once its parent dies; killing children until there
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
                _exit_info(run, pid, status, usage)
        own = set()
    _reap_all()
    return strays


# Other writable places a run could leave something in (the sandbox's /tmp, /dev/shm).
WIPE_TOO = [p for p in os.environ.get("HARNESS_WIPE", "").split(":") if os.path.isabs(p)]


def _wipe_scratch() -> None:
    for extra in WIPE_TOO:
        _empty(extra)
    entries = os.listdir(SCRATCH)
    if entries == ["run"] and not os.listdir(RUN_DIR):
        return
    _empty(SCRATCH)
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)


def _empty(directory: str) -> None:
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(directory, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                import shutil

                shutil.rmtree(path, onerror=_unlock_and_retry)
            else:
                os.unlink(path)
        except OSError:
            pass


def _unlock_and_retry(function: Any, path: str, _exc: Any) -> None:
    """A run may leave a directory it made unreadable or unwritable: open it up
    (it is ours, same uid) and try again, so nothing survives into the next run."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            import shutil

            os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
        else:
            function(path)
    except OSError:
        pass


def _exit_info(run: Run, pid: int, status: int, usage: Any) -> dict[str, Any]:
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
    info["memory_exceeded"] = info["code"] == MEMORY_EXIT
    run.last_exit = info
    return info


def _spawn_solution(run: Run, mode: str, fds: list[int], spare: Spare | None) -> int:
    """Start a solution process for `run`: hand the fds to the spare if there is one
    (forked while no run was going, so the fork is off the run's path), else fork."""
    seed, limits = int(run.spec["seed"]), run.limits
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
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run come back here to be killed
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_r, False)
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    run: Run | None = None
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
                    _send_quietly(ctl, _exit_info(run, pid, status, usage))
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
            run = Run(protocol.receive(spec_fd))
        elif op == "spawn" and run is not None:
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
            _wipe_scratch()
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
                _close_all_but({IN_FD, OUT_FD, 2, zygote_end.fileno(), spec_r})
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
        every later fork would carry, and no run may find another's solution."""
        protocol.send(self.spec_w, {key: value for key, value in spec.items() if key != "solution"})
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


# -- the judge's side of a run ---------------------------------------------------------------


class _Backstop(BaseException):
    """Raised by the alarm when judging overruns; not an Exception, so test code's
    own `except Exception` cannot swallow it."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Backstop()


class Hygiene:
    """What the judge restores after every run: test code runs in this process."""

    def __init__(self) -> None:
        import builtins

        self.builtins = builtins
        self.saved_builtins = dict(builtins.__dict__)
        self.saved_modules = set(sys.modules)
        self.saved_path = list(sys.path)

    def restore(self) -> None:
        self.builtins.__dict__.clear()
        self.builtins.__dict__.update(self.saved_builtins)
        for name in set(sys.modules) - self.saved_modules:
            del sys.modules[name]
        sys.path[:] = self.saved_path


def _seed_random(seed: int, code: Any) -> None:
    """Code that draws from `random` draws the same numbers for the same seed: in a
    solution process `code` is the candidate's source, in the judge the tests.
    A warm sandbox has `random` loaded; a cold one imports it (~4 ms) only for
    code that names it. (Code that hides the name from us gets unseeded numbers,
    as it would from os.urandom: its own results are then what varies.)"""
    if "random" not in sys.modules and "random" not in (code if isinstance(code, str) else repr(code)):
        return
    import random

    random.seed(seed)


def handle_run(spec: dict[str, Any], zygote: Zygote, hygiene: Hygiene) -> tuple[dict[str, Any], Any]:
    """One run: hand the zygote the solution, read the tests, judge, end the run."""
    started = time.monotonic()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = round((time.monotonic() - started) * 1000, 3)

    wanted = spec.get("hash_seed")
    if wanted is not None and str(wanted) != os.environ.get("PYTHONHASHSEED"):
        # The host sent the run to the wrong sandbox: its string hashes would not
        # be the ones the seed promises. Refuse rather than give a different result.
        protocol.receive(IN_FD)  # the run's tests frame, unread
        detail = f"run wants hash seed {wanted}, sandbox has {os.environ.get('PYTHONHASHSEED')}"
        result = {"op": "result", "run_id": spec.get("run_id"), "record": None, "anomaly": "hash_seed_mismatch",
                  "detail": detail}  # fmt: skip
        return result, lambda: None
    zygote.begin(spec)
    tests = protocol.receive(IN_FD)
    mark("tests_read")
    anomaly: str | None = None
    record: dict[str, Any] | None = None
    _seed_random(int(spec["seed"]), tests)
    signal.setitimer(signal.ITIMER_REAL, float(spec["limits"]["wall_s"]) + 10.0)
    try:
        record = judge.judge_run(zygote.ctl, spec, tests)
    except _Backstop:
        anomaly = "judge_unresponsive"
    except judge.ChannelLost:
        anomaly = "zygote_died"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    mark("judged")
    if anomaly is None and not zygote.alive():
        anomaly = "zygote_died"  # the run killed or stopped it: this sandbox cannot vouch for the run
    exits = [e for e in (record or {}).pop("solution_exits", []) if isinstance(e, dict)]
    if record is not None and anomaly is None and len(exits) < int(record.pop("solution_count", 0)):
        exits = []  # a process the judge did not see exit: take the zygote's full accounting instead
    result = {
        "op": "result",
        "run_id": spec.get("run_id"),
        "record": record,
        "anomaly": anomaly,
        "cpu_s": round(sum(float(e.get("cpu_s", 0.0)) for e in exits), 6),
        "peak_memory_kb": max((int(e.get("maxrss_kb", 0)) for e in exits), default=0),
        "solution_processes": len(exits),
        "solution_exit": exits[-1] if exits else None,
        "wall_s": round(time.monotonic() - started, 6),
        "timings_ms": marks,
    }
    if exits or anomaly is not None:
        return result, lambda: _finish_run(zygote, hygiene)
    # Without the judge's own view of every exit, end the run first and report the
    # zygote's accounting (what the run left behind included).
    ended, anomaly = _end_run_now(zygote)
    hygiene.restore()
    result.update(anomaly=result["anomaly"] or anomaly, cpu_s=ended.get("cpu_s", 0.0),
                  peak_memory_kb=ended.get("peak_memory_kb", 0),
                  solution_processes=ended.get("solution_processes", 0),
                  solution_exit=ended.get("solution_exit"), leftover_processes=ended.get("leftover_processes", 0),
                  wall_s=round(time.monotonic() - started, 6))  # fmt: skip
    return result, lambda: None


def _end_run_now(zygote: Zygote) -> tuple[dict[str, Any], str | None]:
    try:
        return zygote.end(), None
    except (ZygoteGone, OSError):
        return {}, "zygote_died"


def _finish_run(zygote: Zygote, hygiene: Hygiene) -> None:
    """After the result is on its way: kill what the run started, wipe, restore.
    Always done before the next frame is read, so no run sees another's leftovers;
    a zygote lost here makes the next run's first attempt fail and be rerun."""
    _end_run_now(zygote)
    hygiene.restore()


def main() -> None:
    if not SCRATCH or not os.path.isabs(SCRATCH):
        sys.exit("agent: HARNESS_SCRATCH must name the sandbox's private scratch directory")
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem or fd of ours (inherited by forks)
    if os.environ.get("HARNESS_WARM", "1") == "1":  # a one-run sandbox skips what only reuse repays
        for name in WARM_MODULES:
            __import__(name)
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)
    if os.environ.get("HARNESS_WARM", "1") == "1":
        gc.collect()
        gc.freeze()  # keep forked children from touching (and copying) these pages
    zygote = Zygote()  # before any frame is read: it must never hold a test
    if os.environ.get("HARNESS_WARM", "1") == "1":
        try:  # the judge runs the pytest kind itself; the zygote stays lean without it
            import _pytest.python  # noqa: F401
            import pytest  # noqa: F401
        except ImportError:
            pass
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _alarm)
    hygiene = Hygiene()
    protocol.send(OUT_FD, {"op": "ready", **fingerprint()})
    runs = 0
    while True:
        try:
            message = protocol.receive(IN_FD)
        except protocol.ChannelClosed:
            return
        op = message.get("op")
        if op == "run":
            finish: Any = None
            try:
                result, finish = handle_run(message, zygote, hygiene)
            except Exception:
                import traceback

                result = {"op": "result", "run_id": message.get("run_id"), "record": None,
                          "anomaly": "agent_error", "detail": traceback.format_exc()[-4000:]}  # fmt: skip
            runs += 1
            result["agent_runs"] = runs
            protocol.send(OUT_FD, result)
            if finish is not None:
                finish()
        elif op == "ping":
            open_fds = len(os.listdir("/proc/self/fd"))
            protocol.send(OUT_FD, {"op": "pong", "runs": runs, "pid": os.getpid(), "open_fds": open_fds})
        elif op == "exit":
            return
        elif op == "tests":
            continue  # the tests of a run that failed before reading them
        else:
            protocol.send(OUT_FD, {"op": "error", "message": f"unknown op {op!r}"})


def entry() -> None:
    """What the sandboxes start: python3 ... -c "from harness.supervisor import entry; entry()"
    (not -m, whose runpy costs ~6 ms; not the script's path, which is compiled afresh).
    A template (HARNESS_TEMPLATE=1) starts the same way and forks fresh sandboxes."""
    if os.environ.get("HARNESS_TEMPLATE") == "1":
        from harness import fresh

        fresh.entry()
        return
    try:
        main()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    entry()
