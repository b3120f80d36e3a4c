"""The `generate` and `validate` run kinds: a stdio task's test generator writing
inputs, and its validator judging them (tasks_app/test_generators.py), each a program
of the task's, in a sandbox of its own like a checker (never a solution's).

- generate: for each seed of the run, one fresh process of the generator called as
  `generator SEED`; what it prints is that seed's input. A process that fails (an
  exit code, a signal, a limit) gives no input, and says why.
- validate: for each input, one fresh process of the validator with the input on
  stdin; exit 0 is valid, anything else invalid, with what it said.
"""

from __future__ import annotations

import time

from . import program
from .capture import feed_soon
from .outcomes import OUTCOME_FAILED, OUTCOME_PASSED

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from .judge import Judge

MESSAGE_CHARS = 500


def run(judge: Judge) -> None:
    if program.spec(judge) is None:
        raise ValueError(f"a {judge.run_spec['kind']} run needs its program")
    case_s = float(judge.tests.get("case_wall_s") or judge.limits["wall_s"])
    if judge.run_spec["kind"] == "generate":
        inputs: dict[str, str] = {}
        failures: dict[str, str] = {}
        for seed in judge.tests.get("seeds") or []:
            name = str(int(seed))
            said, text = _one(judge, case_s, args=[name], stdin=None)
            if said:
                failures[name] = said
            else:
                inputs[name] = text
            judge.record(f"seed {name}", OUTCOME_FAILED if said else OUTCOME_PASSED, said, time.monotonic())
        judge.data = {"inputs": inputs, "failures": failures}
    else:
        verdicts = []
        for index, text in enumerate(judge.tests.get("inputs") or []):
            said, _ = _one(judge, case_s, args=[], stdin=str(text))
            verdicts.append({"valid": not said, "message": said})
            judge.record(f"input {index}", OUTCOME_FAILED if said else OUTCOME_PASSED, said, time.monotonic())
        judge.data = {"verdicts": verdicts}


def _one(judge: Judge, case_s: float, *, args: list[str], stdin: str | None) -> tuple[str, str]:
    """(why it failed, or "", what it printed) of one process of the run's program."""
    child = program.spawn(judge, stdin=stdin is not None, args=args)
    if stdin is not None:
        feed_soon(child.stdin_fd, stdin.encode("utf-8", errors="surrogateescape"))
    child.out.join(max(0.0, min(case_s, judge.remaining())))
    if child.out.is_alive():
        judge.kill(child)
        judge.reap(child)
        return f"ran past its {case_s:g} s", ""
    status = judge.reap(child)
    child.err.join(1.0)
    said = child.err.text().strip()[-MESSAGE_CHARS:]
    if child.out.exceeded:
        return f"wrote more than {judge.output_cap} bytes", ""
    if status.get("cpu_exceeded"):
        return f"used up its CPU time. {said}".strip(), ""
    if status.get("memory_exceeded") or program.ran_out_of_memory(judge, child, status):
        return f"ran out of memory. {said}".strip(), ""
    if status.get("signal"):
        return f"was ended by signal {status['signal']}. {said}".strip(), ""
    if status.get("code"):
        return f"exited with code {status['code']}. {said}".strip(), ""
    return "", child.out.text()
