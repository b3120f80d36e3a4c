"""The `check` run kind: a task's checker program judging the outputs a solution's
run left, under the testlib contract, in a sandbox of its own (never the solution's).

The run's program is the checker (built like any program: program.py). Each case
is three files written into the run directory, the test's input, the contestant's
output and the jury's answer, and one fresh process of the checker called as
`checker <input> <output> <answer>`. Its exit code is its verdict:

    0 accepted, 1 wrong answer, 2 presentation error, 4 presentation error
    (testlib's "dirt": output left over), 3 the checker failed.

Anything else (another exit code, a signal, the time or memory limit, partial
points, which a binary verdict cannot hold) is the checker failing too: the task's
fault, never the solution's. So is a checker that crashed with an exit code of
the contract: an uncaught exception exits 1 in Python, Java, Node, Ruby, Lua and
C#, and a Go panic exits 2, which would read as a wrong answer or a presentation
error; the runtime's own crash report on stderr (CRASH_MARKERS) is the evidence.
What the checker said (stderr, else stdout) is kept as the verdict's message.
"""

from __future__ import annotations

import os
import time

from . import program, scratch
from .outcomes import OUTCOME_FAILED, OUTCOME_PASSED

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge

EXIT_VERDICTS = {0: "ok", 1: "wrong_answer", 2: "presentation_error", 3: "fail", 4: "presentation_error"}
MESSAGE_CHARS = 1000
# What runtimes print when a program dies of an uncaught error (checked on stderr).
CRASH_MARKERS = (
    "Traceback (most recent call last):",  # Python
    'Exception in thread "main"',  # Java
    "\nNode.js v",  # Node, after an uncaught exception's stack
    "\ngoroutine ",  # Go, after "panic: "
    "stack traceback:",  # Lua
    "Unhandled Exception:",  # Mono
    "Unhandled exception.",  # .NET
    "' panicked at ",  # Rust (exit 101 anyway)
    ":in `",  # Ruby's backtrace
    "PHP Fatal error:",
)


def run(judge: Judge) -> None:
    cases = judge.tests.get("cases") or []
    if program.spec(judge) is None:
        raise ValueError("a check run needs its checker's program")
    directory = os.path.join(scratch.RUN_DIR, "cases")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    verdicts: dict[str, dict[str, Any]] = {}
    for index, case in enumerate(cases):
        started = time.monotonic()
        name = str(case["name"])
        if judge.remaining() <= 0:
            verdicts[name] = judged("fail", "no time was left for this case in the checker's run", None)
            judge.record(name, OUTCOME_FAILED, verdicts[name]["message"], started)
            continue
        paths = []
        for part in ("input", "output", "answer"):
            path = os.path.join(directory, f"{index}.{part}")
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(str(case.get(part) or ""))
            os.chmod(path, 0o444)
            paths.append(path)
        verdicts[name] = _judge_case(judge, paths)
        outcome = OUTCOME_PASSED if verdicts[name]["verdict"] != "fail" else OUTCOME_FAILED
        judge.record(name, outcome, verdicts[name]["message"], started)
    judge.data = {"verdicts": verdicts}


def _judge_case(judge: Judge, paths: list[str]) -> dict[str, Any]:
    # Each case has its own wall time (one slow case must not starve the others of theirs).
    case_s = float(judge.tests.get("case_wall_s") or judge.limits["wall_s"])
    child = program.spawn(judge, stdin=False, args=paths)
    child.out.join(max(0.0, min(case_s, judge.remaining())))
    if child.out.is_alive():
        judge.kill(child)
        judge.reap(child)
        return judged("fail", f"the checker ran past its {case_s:g} s of wall time for a case", None)
    status = judge.reap(child)
    child.err.join(1.0)
    return verdict_of(judge, child, status)


def verdict_of(judge: Judge, child: Child, status: dict[str, Any], who: str = "checker") -> dict[str, Any]:
    """The testlib verdict of a judging program (the checker, or an interactor: `who`)
    that has exited with `status`."""
    said = (child.err.text().strip() or child.out.text().strip())[-MESSAGE_CHARS:]
    if status.get("cpu_exceeded"):
        return judged("fail", f"the {who} used up its CPU time. {said}", status)
    if status.get("memory_exceeded") or program.ran_out_of_memory(judge, child, status):
        return judged("fail", f"the {who} ran out of memory. {said}", status)
    if status.get("signal"):
        return judged("fail", f"the {who} was ended by signal {status['signal']}. {said}", status)
    code = status.get("code")
    verdict = EXIT_VERDICTS.get(code) if isinstance(code, int) else None
    stderr = child.err.text()
    if verdict in ("wrong_answer", "presentation_error") and any(marker in stderr for marker in CRASH_MARKERS):
        return judged("fail", f"the {who} crashed (exit code {code}). {said}", status)
    if verdict == "fail":
        return judged("fail", f"the {who} reported its own failure (exit code 3). {said}", status)
    if verdict is None:
        meaning = "partial points, which a pass-or-fail verdict cannot hold" if code == 7 else "no testlib verdict"
        return judged("fail", f"the {who} exited with code {code} ({meaning}). {said}", status)
    return judged(verdict, said, status)


def judged(verdict: str, message: str, status: dict[str, Any] | None) -> dict[str, Any]:
    status = status or {}
    return {"verdict": verdict, "message": message.strip()[: MESSAGE_CHARS + 200], "code": status.get("code"),
            "signal": status.get("signal")}  # fmt: skip
