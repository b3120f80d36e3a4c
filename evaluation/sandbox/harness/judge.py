"""The judge: the only process of a run that reads the tests and holds expected
values. It starts solution processes through the zygote, talks to them with plain
data (remote.py), runs the suite by its kind, and decides each test's outcome
outside the solution's reach.

The kinds, one module each: suite_assertions.py, suite_check_function.py,
suite_stdio.py and suite_pytest.py (imported only when a pytest suite runs:
it loads `random` and pytest's own modules); and explore.py, not a suite but a run
of its own kind, which searches for inputs that tell mutants from the reference.
"""

from __future__ import annotations

import os
import select
import time

from . import lite, outcomes, resources, suite_assertions, suite_check_function, suite_stdio
from .capture import Capture, collector, feed
from .outcomes import FATAL, CandidateFailure, ChannelLost, LoadError
from .remote import RemoteCalls

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .remote import RemoteObject


class Child:
    """A solution process as the judge holds it: its call channel (None for a program),
    its captured output, and its exit once the zygote reports it."""

    def __init__(self, pid: int, chan: lite.Socket | None, out: Capture, err: Capture) -> None:
        self.pid, self.chan, self.out, self.err = pid, chan, out, err
        self.exit: dict[str, Any] | None = None
        # When the judge learnt of the exit (time.monotonic()).
        self.exited_at: float | None = None
        self.seq = 0
        # "mutant" for the processes an exploration runs other code in (explore.py): what
        # they write is theirs, so neither their output nor its flood is the run's.
        self.role = "solution"


def shuffled(items: list[Any], seed: int) -> list[Any]:
    """`items` in an order fixed by `seed` (Fisher-Yates over splitmix64): the same on
    every Python, and without importing `random` (~4 ms in a cold sandbox)."""
    mask = (1 << 64) - 1
    state = seed & mask
    items = list(items)
    for i in range(len(items) - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        j = z % (i + 1)
        items[i], items[j] = items[j], items[i]
    return items


class Judge(RemoteCalls):
    """One run's judging: its solution processes, its deadline, the outcomes so far."""

    def __init__(self, ctl: lite.Socket, run: dict[str, Any], tests: dict[str, Any]) -> None:
        self.ctl = ctl
        self.ctl_lock = lite.Lock()
        self.run_spec = run
        self.tests = tests
        self.limits = run["limits"]
        self.deadline = time.monotonic() + float(self.limits["wall_s"])
        self.output_cap = int(self.limits["output_bytes"])
        self.children: list[Child] = []
        self.outcomes: list[dict[str, Any]] = []
        self.fatal: str | None = None
        self.started = time.monotonic()
        self.marks: dict[str, float] = {}
        # A fatal failure (timeout, memory, output) raised inside code that catches
        # exceptions (pytest does) is remembered here so it still ends the run.
        self.fatal_failure: CandidateFailure | None = None
        self.remotes: dict[tuple[int, int], RemoteObject] = {}
        self.comparing: set[tuple[int, int]] = set()
        self.program_laid_out = False  # another language's files are in the run directory (program.py)
        self.program_exe: int | None = None  # the built program's descriptor, once laid out (program.py)
        self.setup_error = ""

    def mark(self, name: str) -> None:
        self.marks[name] = round((time.monotonic() - self.started) * 1000, 3)

    # -- talking to the zygote ------------------------------------------------------------

    def _ctl_send(self, message: dict[str, Any], fds: list[int] = ()) -> None:
        with self.ctl_lock:
            lite.send_fds(self.ctl, [lite.dumps(message).encode()], list(fds))

    def _ctl_receive(self, timeout: float) -> dict[str, Any] | None:
        ready, _, _ = select.select([self.ctl], [], [], max(0.0, timeout))
        if not ready:
            return None
        data = self.ctl.recv(65536)
        if not data:
            raise ChannelLost("the zygote closed its control channel")
        return lite.loads(data)

    def _wait_for(self, predicate: Any, timeout: float) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while True:
            message = self._ctl_receive(end - time.monotonic())
            if message is None:
                return None
            if message.get("op") == "exited":
                for child in self.children:
                    if child.pid == message["pid"]:
                        child.exit = message
                        child.exited_at = time.monotonic()  # when the judge learnt of it
            if predicate(message):
                return message

    def _start_capture(self, child: Child, out_r: int, err_r: int) -> None:
        child.out = Capture(out_r, self.output_cap, lambda: self._output_exceeded(child))
        child.err = Capture(err_r, self.output_cap, lambda: self._output_exceeded(child))
        collector().add(child.out, child.err)
        self.children.append(child)

    def spawn(self, mode: str, *, stdin: bool = False, source: str | None = None,
              wired: tuple[int, int] | None = None, exe: int | None = None,
              memory_mb: int | None = None) -> Child:  # fmt: skip
        """Ask the zygote for a fresh solution process wired to new pipes of ours, loading
        `source` (by default the run's solution: an exploration loads mutants too).
        `wired`: its stdin and stdout are these descriptors instead (an interactive run's
        pipes to the other side: suite_interactive.py), closed here once handed over; its
        captured output is then empty, and only its stderr is ours. `exe`: a built
        program, open here, that an `exec` process runs (program.py), closed here too.
        `memory_mb`: its memory limit, where not the run's (a runtime's overhead added)."""
        ours, theirs = [], []
        if exe is not None:
            theirs.append(exe)
        chan = None
        if mode == "calls":
            chan, child_end = lite.socketpair()
            theirs.append(child_end.fileno())
            ours.append(child_end)
        if stdin and wired is None:
            read_end, write_end = os.pipe()
            theirs.append(read_end)
        out_r, out_w = os.pipe()
        if wired is not None:
            theirs.append(wired[0])
            os.close(out_w)  # nothing writes to ours: the capture ends at once
            out_w = wired[1]
        err_r, err_w = os.pipe()
        source_r, source_w = os.pipe()
        theirs += [out_w, err_w, source_r]
        self._ctl_send({"op": "spawn", "mode": mode, **({"memory_mb": memory_mb} if memory_mb else {})}, theirs)
        for fd in theirs:
            if not (chan is not None and fd == ours[0].fileno()):
                os.close(fd)
        for sock in ours:
            sock.close()
        text = self.run_spec["solution"] if source is None else source
        source = text.encode("utf-8", errors="replace")
        if len(source) < 60_000:  # fits the pipe's buffer: no reader needed yet
            feed(source_w, source)
        else:
            lite.start_thread(feed, source_w, source)
        reply = self._wait_for(lambda m: m.get("op") == "spawned", 10.0)
        if reply is None:
            raise ChannelLost("the zygote did not start a solution process")
        if reply.get("error"):  # nothing of the solution's ran: a fault of this sandbox
            for fd in (out_r, err_r, *([write_end] if stdin and wired is None else [])):
                os.close(fd)
            raise RuntimeError(str(reply["error"]))
        child = Child(reply["pid"], chan, None, None)  # type: ignore[arg-type]
        child.stdin_fd = write_end if stdin and wired is None else None  # type: ignore[attr-defined]
        self._start_capture(child, out_r, err_r)
        return child

    def kill(self, child: Child) -> None:
        if child.exit is None:
            self._ctl_send({"op": "kill", "pid": child.pid})

    def _output_exceeded(self, child: Child) -> None:
        self.kill(child)

    def reap(self, child: Child, timeout: float = 5.0) -> dict[str, Any]:
        if child.exit is None:
            self._wait_for(lambda m: m.get("op") == "exited" and m.get("pid") == child.pid, timeout)
        return child.exit or {"code": None, "signal": None}

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    # -- running a suite -----------------------------------------------------------------------

    def record(self, name: str, outcome: str, message: str, started: float) -> None:
        self.outcomes.append(outcomes.outcome_of(name, outcome, message, started))

    def named_tests(self) -> list[tuple[str, Any]]:
        items = [(f"visible[{i}]", t) for i, t in enumerate(self.tests.get("visible") or [])]
        items += [(f"hidden[{i}]", t) for i, t in enumerate(self.tests.get("hidden") or [])]
        return shuffled(items, int(self.run_spec["seed"]))

    def run(self) -> dict[str, Any]:
        kind = self.run_spec["kind"]
        try:
            if kind == "stdio":
                suite_stdio.run(self)
            elif kind == "pytest":
                from . import suite_pytest  # pytest's modules and `random`: not for a cold start

                suite_pytest.run(self)
            elif kind == "assertions":
                suite_assertions.run(self)
            elif kind == "compile":
                from . import program

                program.compile_run(self)
            elif kind == "check":
                from . import suite_checker

                suite_checker.run(self)
            elif kind in ("generate", "validate"):
                from . import suite_generate

                suite_generate.run(self)
            elif kind in ("interactive", "interactor"):
                from . import suite_interactive

                suite_interactive.run(self)
            elif kind == "explore":
                from . import explore  # `random` and `ast`: not for a cold start of the other kinds

                explore.run(self)
            else:
                suite_check_function.run(self)
        except CandidateFailure as exc:
            self.fatal = FATAL.get(exc.kind, "failed")
            self.message = str(exc)
        finally:
            self.mark("suite_done")
            self.drain()
            self.mark("drained")
        return outcomes.run_record(self)

    def drain(self) -> None:
        """End every solution process and read all it wrote, so the output limit is
        judged on everything written, not on how far a reader thread had got."""
        # One round trip to the zygote before the verdict goes out: a run that killed or
        # stopped it must not pass for one this sandbox can vouch for (nor leave a broken
        # sandbox in the pool for the next run to fail on). Asked first, so the zygote
        # answers while the solution processes hang up; the answer is awaited below.
        self._ctl_send({"op": "ping"})
        for child in self.children:
            if child.chan is not None:
                child.chan.close()  # end of input: a serving candidate exits
        end = time.monotonic() + 1.0
        for child in self.children:
            for capture in (child.out, child.err):
                capture.join(max(0.0, end - time.monotonic()))
        for child in self.children:
            if child.out.is_alive() or child.err.is_alive():
                self.kill(child)
                child.out.join(2.0)
                child.err.join(2.0)
        for child in self.children:  # a serving process lingers after hanging up: measure it there
            if child.exit is None and child.chan is not None:
                child.exit = resources.lingering_usage(child.pid)
        if self._wait_for(lambda m: m.get("op") == "pong", 0.5) is None:
            raise ChannelLost("the zygote did not answer after the run")
        end = time.monotonic() + 0.5
        for child in self.children:  # each exits on its own once its input ends; note how
            if child.exit is None:
                try:
                    self._wait_for(lambda m, pid=child.pid: m.get("op") == "exited" and m.get("pid") == pid,
                                   max(0.0, end - time.monotonic()))  # fmt: skip
                except ChannelLost:
                    break
        own = [c for c in self.children if c.role != "mutant"]
        if self.fatal is None and any(c.out.exceeded or c.err.exceeded for c in own):
            self.fatal = "output_exceeded"
            self.message = f"the candidate wrote more than {self.output_cap} bytes of output"

    def load(self, source: str | None = None, *, wait_s: float | None = None, role: str = "solution") -> Child:
        """A solution process that has loaded `source` (the run's solution by default),
        waiting at most `wait_s` for it (by default the rest of the run's wall time)."""
        child = self.spawn("calls", source=source)
        child.role = role
        fd = child.chan.fileno()
        wait = self.remaining() if wait_s is None else min(wait_s, self.remaining())
        ready, _, _ = select.select([fd], [], [], max(0.0, wait))
        if not ready:
            self.kill(child)
            if wait_s is not None and wait < self.remaining():
                raise CandidateFailure("budget", f"loading took longer than {wait_s:.3g} s")
            raise CandidateFailure("timeout", "loading the solution took longer than the wall-time limit")
        loaded = self.receive_from(child)
        self.mark("loaded")
        if not isinstance(loaded, dict):
            self.kill(child)
            raise CandidateFailure("exited", "the candidate corrupted its channel while loading")
        if loaded.get("memory"):
            raise CandidateFailure("memory", "the candidate ran out of memory while loading")
        if loaded.get("loaded") is not True:
            error = loaded.get("error") if isinstance(loaded.get("error"), dict) else {}
            self.load_error = f"{error.get('type')}: {error.get('message')}\n{loaded.get('traceback', '')}"
            raise LoadError(self.load_error)
        return child


def judge_run(ctl: lite.Socket, run: dict[str, Any], tests: dict[str, Any]) -> dict[str, Any]:
    """Judge one run and return its complete record. ChannelLost propagates: a
    broken sandbox is for the engine to rerun and blame, not a verdict."""
    judge = Judge(ctl, run, tests)
    try:
        return judge.run()
    except LoadError as exc:
        record = outcomes.run_record(judge)
        record.update(status="error", message=str(exc)[:4000])
        return record
    except ChannelLost:
        raise
    except Exception:  # a fault of the harness, not of the candidate
        return outcomes.harness_fault_record()
    finally:
        if judge.program_exe is not None:
            os.close(judge.program_exe)
