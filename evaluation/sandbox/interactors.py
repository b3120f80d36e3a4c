"""Interactive tasks: the solution talks to the task's interactor through pipes, and
the interactor's exit code is the verdict (testlib's contract, as a checker's).

    {"suite_kind": "stdio", "comparator": {"mode": "interactor", "language": "python",
                                           "source": "..."}}

How it runs: both programs are built first (the compile cache, as any program), then
run side by side in two fresh sandboxes joined by a socket between their supervisors
(engine.run_pair; harness/suite_interactive.py has the protocol). Each case gets two
new pipes, the solution's stdin and stdout on one side and the interactor's on the
other, and the interactor is called as `interactor INPUT OUTPUT ANSWER` with the
case's input and the jury's answer; it alone reads them. Each program has its own
limits: the solution the task's, the interactor a checker's per case (CPU, memory),
and as much wall time as the solution may take plus its own.

The verdicts are folded here. In order:
- the interactor failed (its failure code, a crash, a limit, a compile error) while
  the solution still ran: `checker_error`, the task's fault (no reward, verification
  flags CHECKER_BROKEN). Failing once the solution had ended is the solution's
  failure instead: leaving mid-dialogue (or leaving a process that holds the pipe)
  must not buy a solution a null reward in place of a zero, and a broken interactor
  still shows, as the reference failing;
- the solution ran out of a limit: its status (`timeout`, a deadlock included,
  `memory_exceeded`, `output_exceeded`);
- a case the interactor rejected, or one the solution crashed on: `failed` (the
  interactor's word is the message: a solution killed by SIGPIPE after the
  interactor gave up on it is a wrong answer, as it is everywhere);
- a case the interactor called malformed, and no other failure: `presentation_error`;
- else `passed`.
A sandbox of either side that failed is `sandbox_error`, after one rerun of the pair.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from evaluation.sandbox.evidence import SOLUTION_EVIDENCE
from evaluation.sandbox.special_judges import CHECKER_CASE_S, CHECKER_MEMORY_MB, checker_failed, settled
from evaluation.sandbox.types import Limits, RunRequest, RunResult, Status

INTERACTOR = "interactor"
# Time each side allows for the other's per-case overhead (process starts, files).
CASE_OVERHEAD_S = 2.0
MAX_PAIR_WALL_S = 900.0

Pair = Callable[[RunRequest, RunRequest, str], tuple[RunResult, RunResult]]


def judged_by_interactor(request: RunRequest) -> bool:
    comparator = request.tests.get("comparator") if isinstance(request.tests, dict) else None
    return request.suite_kind == "stdio" and isinstance(comparator, dict) and comparator.get("mode") == INTERACTOR


def case_names(tests: dict[str, Any]) -> list[str]:
    return [f"{group}[{index}]" for group in ("visible", "hidden") for index in range(len(tests.get(group) or []))]


def run_with_interactor(request: RunRequest, run: Callable[[RunRequest], RunResult], backend: str,
                        pair: Pair) -> RunResult:  # fmt: skip
    """`request`'s result with each case judged by the task's interactor. `run`
    executes one request (for the compiles); `pair` runs the two sides together."""
    from evaluation.sandbox import programs

    names = case_names(request.tests)
    interactor = request.tests["comparator"]
    allowance = min(MAX_PAIR_WALL_S, (CHECKER_CASE_S + CASE_OVERHEAD_S) * max(1, len(names)))
    solution_wall = request.limits.wall_s
    solution = dataclasses.replace(
        request, suite_kind="interactive", tests={"cases": names, "solution_wall_s": solution_wall},
        limits=dataclasses.replace(request.limits, wall_s=solution_wall + allowance + CASE_OVERHEAD_S),
    )  # fmt: skip
    judge = RunRequest(
        suite_kind=INTERACTOR, solution=str(interactor.get("source") or ""), language=str(interactor.get("language")),
        tests={"visible": request.tests.get("visible") or [], "hidden": request.tests.get("hidden") or [],
               "case_wall_s": CHECKER_CASE_S, "solution_wall_s": solution_wall},
        limits=Limits(wall_s=solution_wall + allowance, cpu_s=CHECKER_CASE_S, memory_mb=CHECKER_MEMORY_MB,
                      processes=16, output_bytes=256 << 10),
        seed=request.seed,
    )  # fmt: skip
    built = programs.prepared(judge, run, backend)
    if isinstance(built, RunResult):
        if built.status == Status.COMPILE_ERROR:
            return checker_failed(_shell(request, built), f"the task's interactor does not compile: {built.message}")
        return _shell(request, built)  # its toolchain is missing here: sandbox_error
    ready = programs.prepared(solution, run, backend) if request.language != "python" else solution
    if isinstance(ready, RunResult):
        return ready  # the solution's compile error (or its toolchain's absence)
    ours, theirs = pair(ready, built, backend)
    return fold(ours, theirs)


def fold(ours: RunResult, theirs: RunResult) -> RunResult:
    """The solution's result (`ours`) judged by the interactor's run (`theirs`)."""
    result = dataclasses.replace(ours, tests=list(ours.tests), data=None)
    result.data = {"interactor": {"status": str(theirs.status), "wall_s": round(theirs.wall_s, 4),
                                  "runtime_fingerprint": theirs.runtime_fingerprint,
                                  "request_digest": theirs.request_digest}}  # fmt: skip
    if ours.status == Status.SANDBOX_ERROR:
        result.message = f"the solution's sandbox failed: {ours.message}"[:8000]
        return result
    if ours.anomaly in SOLUTION_EVIDENCE and ours.attempts > 1:
        return result  # it broke its own sandbox (engine._blame): the interactor's side then lost it
    if theirs.status == Status.SANDBOX_ERROR:
        result.status = Status.SANDBOX_ERROR
        result.message = f"the interactor's sandbox failed: {theirs.message}"[:8000]
        return result
    if ours.status not in (Status.PASSED, Status.FAILED, Status.TIMEOUT, Status.MEMORY_EXCEEDED,
                           Status.OUTPUT_EXCEEDED):  # fmt: skip
        return result  # it did not load (a Python solution's import error): the solution's own
    verdicts = (theirs.data or {}).get("verdicts") if isinstance(theirs.data, dict) else None
    if theirs.status != Status.PASSED or not isinstance(verdicts, dict):
        return checker_failed(result, f"the interactor's run ended {theirs.status}: {theirs.message}")
    broken, presentation = [], set()
    for test in result.tests:
        verdict = verdicts.get(test.name)
        if verdict is None:
            continue  # never reached (the run ended on a limit first)
        said = str(verdict.get("message") or "")
        if verdict["verdict"] not in ("ok", "wrong_answer", "presentation_error") and verdict.get("after_solution"):
            # It failed once the solution had gone: the solution may have caused it (left
            # mid-dialogue, or left a process holding the pipe), and a solution must not
            # escape a zero reward that way. Its failure; a broken interactor still
            # shows, as the reference failing.
            how = test.message if test.outcome == "failed" else "with exit code 0"
            test.outcome = "failed"
            test.message = f"the solution ended ({how}) before the dialogue did, and the interactor then failed: {said}"
        elif verdict["verdict"] not in ("ok", "wrong_answer", "presentation_error"):
            # Its own failure, a crash or a limit, while the solution still ran: the task's fault.
            test.outcome, test.message = "error", f"the interactor failed: {said}".strip()
            broken.append(f"{test.name}: {said or 'failed'}")
        elif test.outcome == "unchecked":
            if verdict["verdict"] == "ok":
                test.outcome, test.message = "passed", said
            elif verdict["verdict"] == "wrong_answer":
                test.outcome, test.message = "failed", f"wrong answer: {said}".strip()
            else:
                test.outcome, test.message = "failed", f"presentation error: {said}".strip()
                presentation.add(test.name)
        else:
            # The interactor gave up on it first; how the solution then ended (SIGPIPE,
            # most often) is the consequence, not the cause.
            test.message = f"wrong answer: {said} ({test.message})".strip()
    if broken:
        return checker_failed(result, f"the task's interactor failed on {len(broken)} test(s); {broken[0]}")
    if result.status in (Status.TIMEOUT, Status.MEMORY_EXCEEDED, Status.OUTPUT_EXCEEDED):
        return result
    for test in result.tests:  # no verdict came for it: never a pass
        if test.outcome == "unchecked":
            test.outcome, test.message = "failed", "the interactor left no verdict"
    return settled(result, presentation)


def _shell(request: RunRequest, source: RunResult) -> RunResult:
    """The request's result made from a run that ended it before the pair started."""
    return RunResult(status=source.status, message=source.message, backend=source.backend,
                     runtime_fingerprint=source.runtime_fingerprint, harness_version=source.harness_version,
                     seed=request.seed, repeat=request.repeat)  # fmt: skip
