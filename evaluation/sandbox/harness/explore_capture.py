"""The first step of an exploration (explore.py): run the task's own tests against
the reference, as its suite kind runs them, with the entry point wrapped in a
recorder that notes every argument tuple the tests pass it (and how long the
slowest call took, for the per-call budget).

The tests run as they would in a verdict (suite_assertions.run_tests, with the
kind's own run_test), so their outcomes are the reference's and go in the record.
"""

from __future__ import annotations

import time

from . import codec, lite, suite_assertions, suite_check_function
from .remote import proxy

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge


class Recorder:
    """The entry point as the tests see it: each call goes to the reference's process
    as a proxy's would, and its arguments, when they are plain data, are noted first
    (before the call: the judge's values are never the ones the call gets)."""

    def __init__(self, judge: Judge, entry: str) -> None:
        self.judge, self.entry = judge, entry
        self.child: Child | None = None
        self.seen: dict[str, Any] = {}  # key -> [args, kwargs] encoded, in the order first seen
        self.slowest = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            encoded = codec.encode([list(args), kwargs])
            self.seen.setdefault(lite.dumps(encoded), encoded)
        except (codec.NotPlainData, RecursionError, ValueError):  # a handle, a proxy, an int too long for JSON
            pass  # no input to replay; the call goes ahead as the test made it
        started = time.monotonic()
        try:
            return self.judge.call(self.child, self.entry, args, kwargs)
        finally:
            self.slowest = max(self.slowest, time.monotonic() - started)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(proxy(self.judge, self.child, self.entry), attr)

    def __repr__(self) -> str:
        return f"<candidate {self.entry}>"

    def inputs(self) -> list[tuple[tuple, dict]]:
        """The distinct argument tuples seen, each a fresh copy, ordered by key (the
        order the tests ran in follows the seed; the inputs do not)."""
        found = []
        for key in sorted(self.seen):
            args, kwargs = codec.decode(self.seen[key])
            found.append((tuple(args), kwargs))
        return found


def capture(judge: Judge, suite_kind: str) -> tuple[Child, dict[str, Any] | None, Recorder]:
    """Run the tests against the reference with the recorder in place of the entry
    point; returns the reference's process, the tests' scope and the recorder. The
    reference's failing to load (LoadError) or blowing the run (a fatal
    CandidateFailure) goes to the caller, as in any run."""
    entry = judge.run_spec.get("entry_point") or ""
    recorder = Recorder(judge, entry)
    run_test = suite_check_function.run_test if suite_kind == "check_function" else suite_assertions.run_test

    def recording(judge: Judge, test_name: str, source: Any, test_scope: dict[str, Any], names: dict[str, Any],
                  child: Child) -> None:  # fmt: skip
        recorder.child = child
        test_scope[entry] = recorder
        run_test(judge, test_name, source, test_scope, {**names, entry: recorder}, child)

    child, names = suite_assertions.run_tests(judge, recording)
    return child, names, recorder
