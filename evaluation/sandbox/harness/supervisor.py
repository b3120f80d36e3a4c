"""The supervisor: a warm interpreter inside a sandbox, made of two processes.

- The zygote (zygote.py) is forked at start-up, before anything is read. It
  never reads a test and never runs solution code; for each solution process a
  run needs, it forks a pristine copy of itself. So a solution process inherits
  no test, no expected value and nothing of an earlier run (modules, monkeypatches).
- The judge (this process) reads each run's tests, asks the zygote for
  solution processes, talks to them with plain data, and decides the verdict
  (judge.py). It is never forked from, so what it holds never reaches a
  solution. Between runs it restores the builtins and module table it
  started with, and the pool recycles the sandbox after a number of runs.

This module is the judge's loop: it greets the host, reads each run, has it
judged under a backstop alarm, and sends the result back.

Run as: python3 -S -s -B -P -c "from harness.supervisor import entry; entry()"   (no site: no .pth, no sitecustomize)
Speaks length-prefixed JSON frames on fd 0 (in) and fd 1 (out); see protocol.py.
"""

from __future__ import annotations

import _signal as signal  # signal.py builds enums at import: ~6 ms in a cold sandbox
import errno
import gc
import os
import sys
import time

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# Imported as the package `harness` (the directory's name inside and outside the
# sandbox), so no module of ours can shadow one the candidate imports.
sys.path.insert(0, os.path.dirname(HERE))
for _path in ("/usr/lib/python3/dist-packages",):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.append(_path)  # pytest for the pytest suite kind; no .pth processing

from harness import codec, held_files, judge, lite, memory_limit, protocol, scratch, solution  # noqa: E402,F401 - warm before forking
from harness.version import harness_version  # noqa: E402
from harness.zygote import IN_FD, OUT_FD, Zygote, ZygoteGone  # noqa: E402

# Modules a candidate commonly imports: loaded once here, shared by every fork.
WARM_MODULES = (
    "math", "re", "itertools", "functools", "collections", "heapq", "bisect", "string", "random",
    "statistics", "fractions", "decimal", "typing", "dataclasses", "json", "datetime", "copy",
    "operator", "enum", "hashlib", "io", "textwrap", "unicodedata", "array", "traceback", "ast",
    "shutil",  # the zygote wipes the scratch with it (scratch.py): loaded late, later forks would differ
)  # fmt: skip
PR_SET_DUMPABLE = 4


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
    if isinstance(spec.get("program"), dict):
        try:
            held_files.resolve(spec["program"])
        except held_files.NotHeld as exc:
            result = {"op": "result", "run_id": spec.get("run_id"), "record": None, "anomaly": "program_not_held",
                      "detail": str(exc)}  # fmt: skip
            return result, lambda: _finish_run(zygote, hygiene)
    solution.seed_random(int(spec["seed"]), tests)
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
    if not scratch.SCRATCH or not os.path.isabs(scratch.SCRATCH):
        sys.exit("supervisor: HARNESS_SCRATCH must name the sandbox's private scratch directory")
    lite.prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem or fd of ours (inherited by forks)
    if os.environ.get("HARNESS_WARM", "1") == "1":  # a one-run sandbox skips what only reuse repays
        for name in WARM_MODULES:
            __import__(name)
    os.makedirs(scratch.RUN_DIR, mode=0o700, exist_ok=True)
    if os.environ.get("HARNESS_WARM", "1") == "1":
        gc.collect()
        gc.freeze()  # keep forked children from touching (and copying) these pages
    zygote = Zygote()  # before any frame is read: it must never hold a test
    for fd in memory_limit.descriptors():  # the zygote's alone (harness/memory_limit.py)
        os.close(fd)
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
            except Exception:  # "agent_error", "agent_runs": wire names from before this was the supervisor
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
    handover = os.environ.pop("HARNESS_HANDOVER", "")
    if handover:  # a Docker sandbox: its descriptors come over a socket (harness/handover.py)
        from harness import handover as taken

        taken.adopt(handover)
    try:
        main()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    entry()
