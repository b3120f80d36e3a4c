"""Calls an exploration makes (explore.py): one source's entry point called with
input after input, each call held to a time budget of its own.

A call that outlasts its budget, or that kills its process, costs that process,
never the run: it is killed, the call is answered as a timeout or an exit, and
the next call gets a fresh process. Arguments go as plain data, so every call
gets a fresh copy of them and the judge's own stays as it was.
"""

from __future__ import annotations

import time

from . import codec, names
from .explore_values import Opaque
from .outcomes import CandidateFailure, LoadError

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge

# How long a process may take to load its source when one is started again.
LOAD_WAIT_S = 10.0


class Answer:
    """What one call came to: "value" (plain data, or Opaque parts), "raised" (the
    exception as "Type: message"), "timeout" (past its budget) or "exited" (the
    process died or broke its channel)."""

    __slots__ = ("kind", "raised", "seconds", "value")

    def __init__(self, kind: str, value: Any = None, raised: str | None = None, seconds: float = 0.0) -> None:
        self.kind, self.value, self.raised, self.seconds = kind, value, raised, seconds


def describe(raised: Any) -> str:
    details = raised if isinstance(raised, dict) else {}
    return f"{str(details.get('type'))[:100]}: {str(details.get('message', ''))[:500]}"


class Runner:
    """A source's process, as an exploration calls it: the reference's (role
    "solution") or a mutant's (role "mutant")."""

    def __init__(self, judge: Judge, source: str | None, role: str, child: Child | None = None,
                 on_spawn: Any = None) -> None:  # fmt: skip
        self.judge, self.source, self.role = judge, source, role
        self.entry = judge.run_spec.get("entry_point") or ""
        self.child = child
        self.on_spawn = on_spawn  # told of each fresh process (the precondition's scope rebinds to it)

    def start(self, wait_s: float = LOAD_WAIT_S) -> Child:
        """The process, started if there is none; raises LoadError or CandidateFailure."""
        if self.child is not None and self.child.exit is None:
            return self.child
        self.child = self.judge.load(self.source, wait_s=wait_s, role=self.role)
        if self.on_spawn is not None:
            self.on_spawn(self.child)
        return self.child

    def discard(self) -> None:
        """Kill the process and wait for its exit, so processes never pile up (the run
        may hold only a few at a time) and each one's accounting is in."""
        child, self.child = self.child, None
        if child is None:
            return
        self.judge.kill(child)
        self.judge.reap(child, 2.0)
        if child.chan is not None:
            child.chan.close()

    def call(self, args: tuple, kwargs: dict, budget_s: float) -> Answer:
        try:
            child = self.start(min(LOAD_WAIT_S, max(0.1, self.judge.remaining())))
        except LoadError as exc:
            return Answer("exited", raised=f"LoadError: {str(exc).splitlines()[0][:500]}")
        except CandidateFailure as exc:
            return Answer("timeout" if exc.kind == "budget" else "exited", raised=f"LoadFailure: {exc}")
        message = {"op": "call", "name": self.entry, "args": codec.encode(tuple(args)),
                   "kwargs": codec.encode(dict(kwargs))}  # fmt: skip
        started = time.monotonic()
        try:
            reply = self.judge.request(child, message, budget_s=budget_s)
        except CandidateFailure as exc:
            seconds = time.monotonic() - started
            self.discard()
            if exc.kind in ("budget", "timeout"):  # past its budget, or its CPU time used up
                return Answer("timeout", seconds=seconds)
            if exc.kind == "memory":
                return Answer("raised", raised=f"MemoryError: {exc}", seconds=seconds)
            return Answer("exited", raised=f"ProcessExit: {exc}", seconds=seconds)
        seconds = time.monotonic() - started
        if "raised" in reply:
            return Answer("raised", raised=describe(reply["raised"]), seconds=seconds)
        if "exception_class" in reply:  # a class, which stays in the solution's process
            return Answer("value", Opaque([None, "exception class"]), seconds=seconds)
        try:
            value = codec.decode(reply["value"], remote=Opaque, policy=names.judge_policy)
        except (KeyError, TypeError, ValueError, RecursionError):
            self.discard()
            return Answer("exited", raised="ProcessExit: the answer is malformed", seconds=seconds)
        return Answer("value", value, seconds=seconds)
