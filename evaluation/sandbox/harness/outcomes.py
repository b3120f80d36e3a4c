"""What judging a run produces, shared by every suite kind: each test's outcome,
the failures that decide outcomes (the candidate's, the suite's, the sandbox's),
and the run's record as the supervisor sends it to the host."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Judge

OUTCOME_PASSED, OUTCOME_FAILED, OUTCOME_ERROR, OUTCOME_SKIPPED = "passed", "failed", "error", "skipped"
# A stdio test whose output waits for the task's checker (suite_stdio.py): no pass until judged.
OUTCOME_UNCHECKED = "unchecked"
# A failure of the candidate that ends the whole run rather than one test.
FATAL = {"timeout": "timeout", "memory": "memory_exceeded", "output": "output_exceeded", "compile": "compile_error"}


class CandidateFailure(Exception):
    """The candidate did not produce a value: it raised, exited, returned something
    that is not plain data, ran out of time or memory, or flooded its output."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ChannelLost(BaseException):
    """The zygote is gone or stuck: the sandbox is broken for this run. A BaseException,
    so the handlers that turn test errors into outcomes never swallow it."""


class SuiteProblem(Exception):
    """The test suite itself cannot run as written (not the candidate's fault)."""


class LoadError(Exception):
    """The solution does not load (syntax error, import error, exception at import)."""


def outcome_of(name: str, outcome: str, message: str, started: float) -> dict[str, Any]:
    """One test's outcome, timed from `started` (time.monotonic())."""
    return {"name": name, "outcome": outcome, "message": message[:2000], "duration_s": time.monotonic() - started}


def run_record(judge: Judge) -> dict[str, Any]:
    """The complete record of a judged run: its status, each test's outcome, what the
    candidate wrote, and the exits the supervisor accounts for."""
    own = [c for c in judge.children if c.role != "mutant"]  # a mutant's output is not the run's
    # Their output is data (judged, or the result), or the other side's (an interactive run).
    quiet = ("stdio", "compile", "check", "interactive", "interactor", "generate", "validate")
    stdout = "".join(c.out.text() for c in own if judge.run_spec["kind"] not in quiet)
    stderr = "".join(c.err.text() for c in own)
    exploring = judge.run_spec["kind"] == "explore"
    if judge.fatal:
        status = judge.fatal
    elif exploring or judge.run_spec["kind"] in ("compile", "check", "interactor", "generate", "validate"):
        # The data is the result (explore: the reference's tests ran only to watch its calls; compile: the
        # artifacts; check and interactor: the verdicts; generate and validate: the inputs and their verdicts)
        status = "passed" if getattr(judge, "data", None) is not None else "failed"
    elif any(o["outcome"] != OUTCOME_PASSED for o in judge.outcomes) or not judge.outcomes:
        status = "failed"
    else:
        status = "passed"
    return {
        "complete": True,
        "status": status,
        "message": getattr(judge, "message", ""),
        "tests": judge.outcomes,
        "stdout": stdout,
        "stderr": stderr,
        "output_truncated": any(c.out.exceeded or c.err.exceeded for c in own),
        "timings_ms": judge.marks,
        # The exits the zygote reported, for the run's accounting; the supervisor removes these.
        "solution_exits": [c.exit for c in judge.children if c.exit],
        "solution_count": len(judge.children),
        # The suite's setup raised (its traceback): with a reference, the task is broken.
        "setup_error": judge.setup_error,
        # What an exploration found (explore.py); None for every other kind.
        "data": getattr(judge, "data", None),
    }


def harness_fault_record() -> dict[str, Any]:
    """The record of a run the harness itself failed to judge (called in its `except`)."""
    import traceback

    return {"complete": True, "status": "sandbox_error", "message": traceback.format_exc()[-4000:],
            "tests": [], "stdout": "", "stderr": ""}  # fmt: skip


def note_pytest_report(entry: dict[str, Any], report: Any) -> None:
    """Fold one of pytest's reports (setup, call, teardown) into a test's entry: an
    xfail or a skip is no pass, a failure outside the call is an error, and `called`
    says whether the test body ran at all (a test that never ran is no pass either)."""
    if getattr(report, "wasxfail", False):
        entry["outcome"], entry["message"] = OUTCOME_SKIPPED, "xfail is not a pass"
    elif report.skipped:
        entry["outcome"], entry["message"] = OUTCOME_SKIPPED, "skipped tests are not passes"
    elif report.failed:
        entry["outcome"] = OUTCOME_FAILED if report.when == "call" else OUTCOME_ERROR
        entry["message"] = str(report.longrepr)[-2000:]
    if report.when == "call":
        entry["called"] = True


def compile_with_rewritten_asserts(source: str, filename: str, config: Any) -> Any:
    """Test source compiled with pytest's own assertion rewriting, so a failing assert
    explains its values."""
    import ast

    tree = ast.parse(source, filename)
    try:
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(tree, source.encode(), None, config)
    except Exception:  # noqa: S110 - plain asserts still decide; only the messages are poorer
        pass
    return compile(tree, filename, "exec")
