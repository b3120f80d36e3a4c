"""The agent: a warm interpreter inside a sandbox that forks a judge and solution
processes for each run. It never runs solution code and never reads a test,
so every process it forks starts pristine: nothing of an earlier run (modules,
monkeypatches, expected values) survives into the next.

Run as: python3 -S -s -B -P agent.py   (site disabled: no .pth, no sitecustomize)
Speaks length-prefixed JSON frames on fd 0 (in) and fd 1 (out); see protocol.py.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import gc
import hashlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# Imported as the package `harness` (the directory's name inside and outside the
# sandbox), so no module of ours can shadow one the candidate imports.
sys.path.insert(0, os.path.dirname(HERE))
for _path in ("/usr/lib/python3/dist-packages",):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.append(_path)  # pytest for the pytest suite kind; no .pth processing

from harness import codec, judge, protocol, solution  # noqa: E402,F401 - warm before forking

# Modules a candidate commonly imports: loaded once here, shared by every fork.
WARM_MODULES = (
    "math", "re", "itertools", "functools", "collections", "heapq", "bisect", "string", "random",
    "statistics", "fractions", "decimal", "typing", "dataclasses", "json", "datetime", "copy",
    "operator", "enum", "hashlib", "io", "textwrap", "unicodedata", "array",
)  # fmt: skip
HARNESS_FILES = ("__init__.py", "agent.py", "codec.py", "judge.py", "protocol.py", "solution.py")
# Wiped between runs, so it must be named explicitly: the sandbox's private tmpfs.
SCRATCH = os.environ.get("HARNESS_SCRATCH", "")
RUN_DIR = os.path.join(SCRATCH, "run")
MEMORY_EXIT = 86
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
IN_FD, OUT_FD = 0, 1


def harness_version() -> str:
    digest = hashlib.sha256()
    for name in HARNESS_FILES:
        with open(os.path.join(HERE, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read() + b"\0")
    return digest.hexdigest()


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def fingerprint() -> dict[str, Any]:
    try:
        import pytest

        pytest_version = pytest.__version__
    except ImportError:
        pytest_version = None
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


def _solution_child(run: Run, mode: str, fds: list[int]) -> None:
    """In the forked solution process: wire the judge's descriptors, shed everything
    else the agent holds, apply the limits, and become the candidate."""
    os.setsid()
    # Move the descriptors out of the way first: dup2 into 0-3 must never
    # overwrite one that is still to be moved (their numbers vary run to run).
    high = [os.dup(fd) if fd >= 100 else fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
    devnull = fcntl.fcntl(os.open(os.devnull, os.O_RDONLY), fcntl.F_DUPFD, 100)
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
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    os.chdir(RUN_DIR)
    seed = int(run.spec["seed"])
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": RUN_DIR, "TMPDIR": RUN_DIR, "LANG": "C.UTF-8"})
    import random

    random.seed(seed)
    sys.argv = ["solution.py"]
    _limit_solution(run.limits)
    source = run.spec["solution"]
    try:
        if mode == "program":
            solution.run_program(source)
        elif mode == "pytest":
            solution.run_pytest(socket.socket(fileno=3), source, seed)
        else:
            solution.serve_calls(socket.socket(fileno=3), source)
    except MemoryError:
        os._exit(MEMORY_EXIT)
    except BaseException:
        os._exit(1)
    os._exit(0)


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


def _frame_complete(data: bytearray) -> bool:
    if len(data) < protocol.HEADER.size:
        return False
    (size,) = protocol.HEADER.unpack(bytes(data[: protocol.HEADER.size]))
    return len(data) >= protocol.HEADER.size + size


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


def _wipe_scratch() -> None:
    entries = os.listdir(SCRATCH)
    if entries == ["run"] and not os.listdir(RUN_DIR):
        return
    for entry in entries:
        path = os.path.join(SCRATCH, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)


def _exit_info(run: Run, pid: int, status: int, usage: Any) -> dict[str, Any]:
    cpu = usage.ru_utime + usage.ru_stime
    run.cpu_s += cpu
    run.peak_kb = max(run.peak_kb, usage.ru_maxrss)
    info: dict[str, Any] = {"op": "exited", "pid": pid, "code": None, "signal": None, "cpu_s": cpu}
    if os.WIFSIGNALED(status):
        info["signal"] = os.WTERMSIG(status)
    else:
        info["code"] = os.WEXITSTATUS(status)
    limit = float(run.limits["cpu_s"])
    info["cpu_exceeded"] = info["signal"] == signal.SIGXCPU or (info["signal"] == signal.SIGKILL and cpu >= limit)
    info["memory_exceeded"] = info["code"] == MEMORY_EXIT
    run.last_exit = info
    return info


def handle_run(spec: dict[str, Any], wakeup_r: int) -> dict[str, Any]:
    """Fork the judge (which reads the tests frame from fd 0 itself), serve its
    requests for solution processes, and return the complete result record."""
    started = time.monotonic()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = round((time.monotonic() - started) * 1000, 3)

    run = Run(spec)
    _wipe_scratch()
    ctl, ctl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    report_r, report_w = os.pipe()
    # The first solution process starts now, beside the judge rather than after
    # it asks: loading the candidate overlaps the judge reading the tests.
    first: dict[str, int] | None = None
    if spec["kind"] != "stdio":
        mode = "pytest" if spec["kind"] == "pytest" else "calls"
        chan, chan_child = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = _spawn_solution(run, mode, [chan_child.detach(), out_w, err_w])
        first = {"pid": pid, "chan": chan.detach(), "out": out_r, "err": err_r}
    judge_pid = os.fork()
    if judge_pid == 0:
        try:
            ctl.close()
            os.close(report_r)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            keep = {IN_FD, 2, ctl_child.fileno(), report_w}
            if first:
                keep |= {first["chan"], first["out"], first["err"]}
            _close_all_but(keep)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, OUT_FD)  # the host's channel is the agent's alone
            os.close(devnull)
            judge.main(ctl_child.fileno(), report_w, IN_FD, spec, first)
        except BaseException:
            traceback.print_exc()  # to the sandbox's stderr: the agent reports judge_left_no_record
        finally:
            os._exit(0)
    mark("judge_forked")
    ctl_child.close()
    os.close(report_w)
    if first:
        for name in ("chan", "out", "err"):
            os.close(first[name])

    record: dict[str, Any] | None = None
    anomaly: str | None = None
    judge_exit: dict[str, Any] | None = None
    report_chunks = bytearray()
    backstop = started + float(run.limits["wall_s"]) + 15.0
    open_fds = [ctl.fileno(), wakeup_r, report_r]
    while not _frame_complete(report_chunks) and (judge_exit is None or report_r in open_fds):
        timeout = backstop - time.monotonic()
        if timeout <= 0:
            anomaly = "judge_unresponsive"
            break
        ready, _, _ = select.select(open_fds, [], [], timeout)
        if wakeup_r in ready:
            try:
                os.read(wakeup_r, 4096)
            except BlockingIOError:
                pass
            for pid, status, usage in _reap_all():
                if pid == judge_pid:
                    judge_exit = {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                                  "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}  # fmt: skip
                elif pid in run.solutions:
                    run.solutions.discard(pid)
                    info = _exit_info(run, pid, status, usage)
                    try:
                        ctl.send(json.dumps(info).encode())
                    except OSError:
                        pass
        if ctl.fileno() in ready:
            try:
                data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 8)
            except OSError:
                data, fds = b"", []
            if not data:
                open_fds.remove(ctl.fileno())
            else:
                _serve(run, ctl, json.loads(data), fds)
        if report_r in ready:
            chunk = os.read(report_r, 1 << 20)
            if chunk:
                report_chunks += chunk
            else:
                open_fds.remove(report_r)
    if report_chunks:
        try:
            (size,) = protocol.HEADER.unpack(bytes(report_chunks[:4]))
            record = json.loads(bytes(report_chunks[4 : 4 + size]))
        except (ValueError, protocol.struct.error):
            anomaly = anomaly or "judge_report_corrupt"
    if record is None and anomaly is None:
        anomaly = "judge_died" if not judge_exit or judge_exit.get("signal") else "judge_left_no_record"
    ctl.close()
    os.close(report_r)
    mark("report_received")
    leftovers = _end_run(run, judge_pid if judge_exit is None else None)
    mark("processes_ended")
    _wipe_scratch()
    mark("scratch_wiped")
    return {
        "op": "result",
        "run_id": spec.get("run_id"),
        "record": record,
        "anomaly": anomaly,
        "judge_exit": judge_exit,
        "cpu_s": round(run.cpu_s, 6),
        "peak_memory_kb": run.peak_kb,
        "solution_processes": run.spawned,
        "solution_exit": run.last_exit,
        "leftover_processes": leftovers,
        "wall_s": round(time.monotonic() - started, 6),
        "timings_ms": marks,
    }


def _spawn_solution(run: Run, mode: str, fds: list[int]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            _solution_child(run, mode, fds)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    run.solutions.add(pid)
    run.spawned += 1
    return pid


def _serve(run: Run, ctl: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    op = message.get("op")
    if op == "spawn":
        pid = _spawn_solution(run, message["mode"], fds)
        ctl.send(json.dumps({"op": "spawned", "pid": pid}).encode())
    elif op == "kill":
        pid = int(message["pid"])
        if pid in run.solutions:
            for target in (-pid, pid):  # its process group first: it called setsid
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    else:
        for fd in fds:
            os.close(fd)


def main() -> None:
    if not SCRATCH or not os.path.isabs(SCRATCH):
        sys.exit("agent: HARNESS_SCRATCH must name the sandbox's private scratch directory")
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem or fd of the agent
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run come back to be killed
    for name in WARM_MODULES:
        __import__(name)
    # pytest is not imported here: it would make every fork cost ~1.5 ms more; the
    # pytest kind imports it in its own solution process.
    gc.collect()
    gc.freeze()  # keep forked children from touching (and copying) these pages
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    os.set_blocking(wakeup_r, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)
    protocol.send(OUT_FD, {"op": "ready", **fingerprint()})
    runs = 0
    while True:
        try:
            message = protocol.receive(IN_FD)
        except protocol.ChannelClosed:
            return
        op = message.get("op")
        if op == "run":
            try:
                result = handle_run(message, wakeup_r)
            except Exception:
                result = {"op": "result", "run_id": message.get("run_id"), "record": None,
                          "anomaly": "agent_error", "detail": traceback.format_exc()[-4000:]}  # fmt: skip
            runs += 1
            result["agent_runs"] = runs
            protocol.send(OUT_FD, result)
        elif op == "ping":
            protocol.send(OUT_FD, {"op": "pong", "runs": runs, "pid": os.getpid()})
        elif op == "exit":
            return
        elif op == "tests":
            continue  # the tests of a run whose judge died before reading them
        else:
            protocol.send(OUT_FD, {"op": "error", "message": f"unknown op {op!r}"})


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
