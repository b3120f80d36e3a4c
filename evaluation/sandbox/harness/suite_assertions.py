"""The assertions suite kind: each test is code whose asserts decide it, run in the
judge in the scope the candidate's top-level names make (scope.py). The loop over
the tests is shared with the check_function kind (suite_check_function.py), which
differs only in what it does with each test's code."""

from __future__ import annotations

import time

from . import remote, scope
from .outcomes import FATAL, OUTCOME_ERROR, OUTCOME_FAILED, OUTCOME_PASSED, CandidateFailure, SuiteProblem

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .judge import Child, Judge

    # run_test(judge, test_name, source, test_scope, names, child): raises if the test fails
    TestRunner = Callable[[Judge, str, Any, dict[str, Any], dict[str, Any], Child], None]


def run(judge: Judge) -> None:
    """Each test's code runs in its own copy of the scope: it passes unless it raises."""
    run_tests(judge, run_test)


def run_test(judge: Judge, test_name: str, source: Any, test_scope: dict[str, Any], names: dict[str, Any],
              child: Child) -> None:  # fmt: skip
    exec(compile(source, f"<{test_name}>", "exec"), test_scope)  # noqa: S102


def run_tests(judge: Judge, run_test: TestRunner) -> tuple[Child, dict[str, Any] | None]:
    """Load the candidate, build the tests' scope (the setup's failure fails every
    test), then run each test in a copy of it, in the seed's order. Returns the
    candidate's process and the scope as the tests left them (None if the setup
    failed), for a caller that goes on using them (an exploration)."""
    child = judge.load()
    try:
        names = scope.namespace(judge, child)
    except (Exception, SystemExit) as exc:  # ChannelLost is neither: a broken sandbox is not a verdict
        setup_failed(judge, exc)
        if isinstance(exc, CandidateFailure) and exc.kind in FATAL:
            judge.setup_error = ""  # it ran out of time or memory: the status says so, nothing raised
            raise
        return child, None
    if judge.fatal_failure is not None:  # the setup caught it, but it still ends the run
        setup_failed(judge, judge.fatal_failure)
        judge.setup_error = ""
        raise judge.fatal_failure
    for test_name, source in judge.named_tests():
        started = time.monotonic()
        test_scope = dict(names)
        try:
            run_test(judge, test_name, source, test_scope, names, child)
        except AssertionError as exc:
            judge.record(test_name, OUTCOME_FAILED, f"assertion failed: {exc}".rstrip(": "), started)
        except CandidateFailure as exc:
            judge.record(test_name, OUTCOME_FAILED, str(exc), started)
            if exc.kind in FATAL:
                raise
            if child.exit is not None or exc.kind == "exited":
                child = _respawn_after_exit(judge, child, names)
        except SuiteProblem as exc:
            judge.record(test_name, OUTCOME_ERROR, f"test error: {exc}", started)
        except Exception as exc:  # the test code itself failed (NameError, TypeError, ...)
            judge.record(test_name, OUTCOME_ERROR, f"test error: {type(exc).__name__}: {exc}", started)
        else:
            judge.record(test_name, OUTCOME_PASSED, "", started)
    return child, names


def setup_failed(judge: Judge, exc: BaseException) -> None:
    """The suite's setup raised: every test fails with its traceback, and the record
    says so (setup_error), for the verification to tell a broken task (its
    reference fails the same way) from a candidate that broke the setup."""
    judge.setup_error = scope.setup_traceback(exc, judge.tests.get("setup") or "")
    candidate_caused = isinstance(exc, (CandidateFailure, remote.CandidateRaised))
    outcome = OUTCOME_FAILED if candidate_caused else OUTCOME_ERROR
    judge.message = f"the test setup raised {scope.exception_line(exc)}"[:2000]
    started = time.monotonic()
    for test_name, _source in judge.named_tests():
        judge.record(test_name, outcome, f"the test setup failed:\n{judge.setup_error}", started)


def _respawn_after_exit(judge: Judge, dead: Child, names: dict[str, Any]) -> Child:
    """The candidate exited mid-suite; later tests get a fresh process so that one
    early exit is not mistaken for many failures of the suite's own making."""
    judge.reap(dead, 2.0)
    child = judge.load()
    remote.rebind_proxies(judge, names, child)
    return child
