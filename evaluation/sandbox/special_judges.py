"""Special judges: a stdio task whose outputs a checker program decides (testlib's
contract), run as two sandboxed runs that never share a sandbox.

1. The solution's run, in `collect` mode: every test runs as usual (time, memory,
   output, crashes are judged there), and each output is kept, the test left
   `unchecked` (harness/suite_stdio.py). The jury's answers and the checker's
   source never enter that run.
2. The checker's run (the `check` kind, harness/suite_checker.py): the checker,
   built once like any program (programs.py, the compile cache), called per case
   on the input, the contestant's output and the answer, in a sandbox of its own.
   The contestant's output is hostile input to the checker: it runs under the
   checker's own limits, as a solution would.

The verdicts are folded back into the solution's result. A checker that fails,
crashes, runs out of its limits or does not compile makes the result
`checker_error`: the task's fault, never the solution's (no reward; verification
flags the task). A checker's sandbox failing is `sandbox_error`, as any.

Status of the whole run, in order: checker_error if the checker failed on any
case; the solution's own fatal status (timeout, memory, output); `failed` if any
test failed (a wrong answer, or a crash); `presentation_error` if every test that
did not pass was one; `passed`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from evaluation.sandbox.types import Limits, RunRequest, RunResult, Status, TestOutcome

CHECKER = "checker"
COLLECT = {"mode": "collect"}
# The checker's limits: its own, per case, whatever the solution's. A testlib checker
# reads three files and answers in milliseconds; these leave room for a slow language.
CHECKER_CASE_S = 10.0
CHECKER_RUN_S = 300.0
CHECKER_MEMORY_MB = 512
FATAL_STATUSES = (Status.TIMEOUT, Status.MEMORY_EXCEEDED, Status.OUTPUT_EXCEEDED)


def judged_by_checker(request: RunRequest) -> bool:
    comparator = request.tests.get("comparator") if isinstance(request.tests, dict) else None
    return request.suite_kind == "stdio" and isinstance(comparator, dict) and comparator.get("mode") == CHECKER


def checker_limits(cases: int) -> Limits:
    return Limits(wall_s=min(CHECKER_RUN_S, CHECKER_CASE_S * 1.5 * max(1, cases)), cpu_s=CHECKER_CASE_S,
                  memory_mb=CHECKER_MEMORY_MB, processes=16, output_bytes=256 << 10)  # fmt: skip


def run_with_checker(request: RunRequest, run: Callable[[RunRequest], RunResult]) -> RunResult:
    """`request`'s result with its outputs judged by the task's checker; `run` executes
    one request (engine.run with the caller's backend and pool)."""
    checker = request.tests["comparator"]
    result = run(dataclasses.replace(request, tests={**request.tests, "comparator": COLLECT}))
    outputs = (result.data or {}).get("outputs") if isinstance(result.data, dict) else None
    result.data = None
    unchecked = [t for t in result.tests if t.outcome == "unchecked"]
    if not unchecked or not isinstance(outputs, dict):
        # Nothing to judge (it did not compile or load, a sandbox failed, or every test
        # crashed or ran out of a limit): the solution's run decides alone.
        return settled(result)
    cases = _cases(request.tests, {t.name for t in unchecked}, outputs)
    check = RunRequest(suite_kind="check", solution=str(checker.get("source") or ""),
                       tests={"cases": cases, "case_wall_s": CHECKER_CASE_S * 1.5},
                       limits=checker_limits(len(cases)), seed=request.seed,
                       language=str(checker.get("language")))  # fmt: skip
    checked = run(check)
    result.data = {"checker": {"status": str(checked.status), "wall_s": round(checked.wall_s, 4),
                               "runtime_fingerprint": checked.runtime_fingerprint,
                               "request_digest": checked.request_digest}}  # fmt: skip
    if checked.status == Status.SANDBOX_ERROR:
        result.status = Status.SANDBOX_ERROR
        result.message = f"the checker's sandbox failed: {checked.message}"[:8000]
        return result
    if checked.status == Status.COMPILE_ERROR:
        return checker_failed(result, f"the task's checker does not compile: {checked.message}")
    verdicts = (checked.data or {}).get("verdicts") if isinstance(checked.data, dict) else None
    if checked.status != Status.PASSED or not isinstance(verdicts, dict):
        return checker_failed(result, f"the checker's run ended {checked.status}: {checked.message}")
    failures, presentation = [], set()
    for test in unchecked:
        verdict = verdicts.get(test.name) or {"verdict": "fail", "message": "the checker left no verdict"}
        _fold(test, verdict)
        if verdict["verdict"] == "presentation_error":
            presentation.add(test.name)
        elif verdict["verdict"] not in ("ok", "wrong_answer"):
            failures.append(f"{test.name}: {verdict.get('message') or 'failed'}")
    if failures:
        return checker_failed(result, f"the task's checker failed on {len(failures)} test(s); {failures[0]}")
    return settled(result, presentation)


def _cases(tests: dict[str, Any], names: set[str], outputs: dict[str, Any]) -> list[dict[str, str]]:
    cases = []
    for group in ("visible", "hidden"):
        for index, case in enumerate(tests.get(group) or []):
            name = f"{group}[{index}]"
            if name in names:
                cases.append({"name": name, "input": str(case.get("input", "")), "answer": str(case.get("output", "")),
                              "output": str(outputs.get(name, ""))})  # fmt: skip
    return cases


def _fold(test: TestOutcome, verdict: dict[str, Any]) -> None:
    said = str(verdict.get("message") or "")
    if verdict["verdict"] == "ok":
        test.outcome, test.message = "passed", said
    elif verdict["verdict"] == "presentation_error":
        test.outcome, test.message = "failed", f"presentation error: {said}".strip()
    elif verdict["verdict"] == "wrong_answer":
        test.outcome, test.message = "failed", f"wrong answer: {said}".strip()
    else:
        test.outcome, test.message = "error", f"the checker failed: {said}".strip()


def checker_failed(result: RunResult, message: str) -> RunResult:
    result.status = Status.CHECKER_ERROR
    result.message = message[:8000]
    return result


def settled(result: RunResult, presentation: set[str] | frozenset[str] = frozenset()) -> RunResult:
    """The run's status from its tests, once every test is judged (`presentation`: the
    tests the checker called presentation errors)."""
    if result.status not in (Status.PASSED, Status.FAILED):
        return result  # the solution's own: compile error, load error, a limit, a sandbox error
    failed = [t for t in result.tests if t.outcome != "passed"]
    if not failed:
        result.status = Status.PASSED if result.tests else Status.FAILED
    elif all(t.name in presentation for t in failed):
        result.status = Status.PRESENTATION_ERROR
        first = failed[0].message.removeprefix("presentation error: ")
        result.message = result.message or f"presentation error on {len(failed)} test(s); {failed[0].name}: {first}"
    else:
        result.status = Status.FAILED
    return result
