"""The stdio suite kind: the candidate is a program (Python, or another language's
built program: program.py), and each test is an input and the output expected of
it, compared by the task's comparator (compare.py; by default line by line with
trailing whitespace and trailing empty lines left out).

A task judged by a checker program has no comparator here: its run is in `collect`
mode, which keeps each test's output for the checker's own run in another sandbox
(evaluation/sandbox/special_judges.py) and marks the test `unchecked`, never
passed: a run whose outputs no checker saw cannot pass."""

from __future__ import annotations

import time

from . import compare, program
from .capture import feed_soon
from .outcomes import OUTCOME_FAILED, OUTCOME_PASSED, OUTCOME_UNCHECKED, CandidateFailure
from .resources import MEMORY_EXIT

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from .judge import Judge


# Most bytes of output all of a run's tests may leave for a checker together: the
# record carries them to the host in one frame (protocol.MAX_FRAME is 64 MB).
MAX_COLLECTED_BYTES = 32 << 20


def run(judge: Judge) -> None:
    """Each test is a fresh run of the program on its input. A program that runs out
    of time, memory or output room fails its test and ends the run."""
    comparator = judge.tests.get("comparator") or None
    collecting = (comparator or {}).get("mode") == "collect"
    collected: dict[str, str] = {}
    kept = 0
    for test_name, case in judge.named_tests():
        started = time.monotonic()
        child = program.spawn(judge, stdin=True)
        feed_soon(child.stdin_fd, case["input"].encode())
        child.out.join(max(0.0, judge.remaining()))
        if child.out.is_alive():
            judge.kill(child)
            judge.record(test_name, OUTCOME_FAILED, "timed out", started)
            raise CandidateFailure("timeout", f"no output end within the {judge.limits['wall_s']} s limit")
        status = judge.reap(child)
        child.err.join(1.0)
        if child.out.exceeded or child.err.exceeded:
            judge.record(test_name, OUTCOME_FAILED, "output limit exceeded", started)
            raise CandidateFailure("output", f"the program wrote more than {judge.output_cap} bytes")
        if status.get("cpu_exceeded"):
            judge.record(test_name, OUTCOME_FAILED, "CPU time exceeded", started)
            raise CandidateFailure("timeout", "the program used up its CPU time")
        if status.get("code") == MEMORY_EXIT or program.ran_out_of_memory(judge, child, status):
            judge.record(test_name, OUTCOME_FAILED, "memory exceeded", started)
            raise CandidateFailure("memory", "the program ran out of memory")
        if status.get("signal") or status.get("code"):
            how = f"signal {status['signal']}" if status.get("signal") else f"exit code {status.get('code')}"
            judge.record(test_name, OUTCOME_FAILED, f"the program ended with {how}", started)
            continue
        if collecting:
            collected[test_name] = child.out.text()
            kept += len(collected[test_name])
            judge.record(test_name, OUTCOME_UNCHECKED, "for the task's checker to judge", started)
            if kept > MAX_COLLECTED_BYTES:
                raise CandidateFailure("output", f"the tests' outputs together are over {MAX_COLLECTED_BYTES} bytes")
            continue
        differs = compare.mismatch(comparator, case["output"], child.out.text())
        judge.record(test_name, OUTCOME_FAILED if differs else OUTCOME_PASSED, differs or "", started)
    if collecting:
        judge.data = {"outputs": collected}
