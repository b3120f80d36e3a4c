"""The stdio suite kind: the candidate is a program, and each test is an input and
the output expected of it, compared line by line with trailing whitespace and
trailing empty lines left out."""

from __future__ import annotations

import time

from . import lite
from .capture import feed
from .outcomes import OUTCOME_FAILED, OUTCOME_PASSED, CandidateFailure
from .resources import MEMORY_EXIT

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from .judge import Judge


def run(judge: Judge) -> None:
    """Each test is a fresh run of the program on its input. A program that runs out
    of time, memory or output room fails its test and ends the run."""
    for test_name, case in judge.named_tests():
        started = time.monotonic()
        child = judge.spawn("program", stdin=True)
        lite.start_thread(feed, child.stdin_fd, case["input"].encode())
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
        if status.get("memory_exceeded") or status.get("code") == MEMORY_EXIT:
            judge.record(test_name, OUTCOME_FAILED, "memory exceeded", started)
            raise CandidateFailure("memory", "the program ran out of memory")
        got, expected = _normalise(child.out.text()), _normalise(case["output"])
        if status.get("signal") or status.get("code"):
            how = f"signal {status['signal']}" if status.get("signal") else f"exit code {status.get('code')}"
            judge.record(test_name, OUTCOME_FAILED, f"the program ended with {how}", started)
        elif got == expected:
            judge.record(test_name, OUTCOME_PASSED, "", started)
        else:
            judge.record(test_name, OUTCOME_FAILED, _first_difference(expected, got), started)


def _normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _first_difference(expected: list[str], got: list[str]) -> str:
    for number, (want, have) in enumerate(zip(expected, got, strict=False), 1):
        if want != have:
            return f"line {number}: expected {want[:200]!r}, got {have[:200]!r}"
    if len(got) < len(expected):
        return f"output ended after {len(got)} line(s); expected {len(expected)}"
    return f"output has {len(got) - len(expected)} extra line(s) after the expected {len(expected)}"
