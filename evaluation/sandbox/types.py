"""What a run asks for and what it answers, independent of the backend."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

# PYTHONHASHSEED is fixed when an interpreter starts, so a warm sandbox serves one
# hash seed. Runs take theirs from a small set, derived from the run's seed: the
# same seed always hashes the same, repeats with different seeds see different
# string and set orders, and a warm pool can keep a sandbox for each.
HASH_SEEDS = 8


def hash_seed_for(seed: int) -> int:
    """The PYTHONHASHSEED a run with `seed` executes under (1 to HASH_SEEDS)."""
    return 1 + int(seed) % HASH_SEEDS


class Status(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the solution does not load: syntax or import error, exception at import
    COMPILE_ERROR = "compile_error"  # the compiler refused it (or ran out of its limits): the solution's failure
    TIMEOUT = "timeout"
    MEMORY_EXCEEDED = "memory_exceeded"
    OUTPUT_EXCEEDED = "output_exceeded"
    SANDBOX_ERROR = "sandbox_error"  # our fault, never the solution's: not a wrong answer
    # A task's checker said the output is malformed (testlib's _pe): the solution's failure.
    PRESENTATION_ERROR = "presentation_error"
    # The task's checker failed or crashed judging an output: the task's fault, never the
    # solution's; no reward, and verification flags the task (special_judges.py).
    CHECKER_ERROR = "checker_error"


# Every status a finished run can have, as stored: an execution, attempt or reward
# in one of these is done.
FINAL = tuple(status.value for status in Status)
# The final statuses that are never run again: all but `sandbox_error`, which is retried.
SETTLED = tuple(status for status in FINAL if status != Status.SANDBOX_ERROR)
# How much of each stream a stored run keeps: enough to read the failure, not a
# solution's megabyte of output in every row.
OUTPUT_KEPT = 4000


@dataclass(frozen=True)
class Limits:
    wall_s: float = 10.0
    cpu_s: float = 10.0
    memory_mb: int = 256
    processes: int = 32
    output_bytes: int = 1 << 20
    file_bytes: int = 16 << 20

    def as_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies field by field, a tenth of a
        # millisecond twice a run, on the path of every warm execution.
        return {"wall_s": self.wall_s, "cpu_s": self.cpu_s, "memory_mb": self.memory_mb, "processes": self.processes,
                "output_bytes": self.output_bytes, "file_bytes": self.file_bytes}  # fmt: skip


@dataclass(frozen=True)
class RunRequest:
    """One execution: a solution against a suite. `tests` never reaches the
    solution's process for the assertions, check_function and stdio kinds."""

    suite_kind: str
    solution: str
    tests: dict[str, Any]  # {"setup": str, "visible": [...], "hidden": [...]}
    entry_point: str = ""
    limits: Limits = field(default_factory=Limits)
    seed: int = 0
    repeat: int = 0
    # A language of evaluation/sandbox/languages.py; "python" runs in the zygote's own interpreter.
    language: str = "python"
    # How the harness builds or runs another language's program (evaluation/sandbox/programs.py
    # fills it in from the language and the compile cache; never part of what is recorded).
    program: dict[str, Any] | None = None

    @property
    def hash_seed(self) -> int:
        return hash_seed_for(self.seed)

    def run_frame(self, run_id: str) -> dict[str, Any]:
        return {
            "op": "run",
            "run_id": run_id,
            "kind": self.suite_kind,
            "entry_point": self.entry_point,
            "solution": self.solution,
            "limits": self.limits.as_dict(),
            "seed": self.seed,
            "hash_seed": self.hash_seed,
            **({"program": self.program} if self.program is not None else {}),
        }

    def tests_frame(self) -> dict[str, Any]:
        return {"op": "tests", **self.tests}


@dataclass
class TestOutcome:
    name: str
    outcome: str  # passed | failed | error | skipped
    message: str = ""
    duration_s: float = 0.0


@dataclass
class RunResult:
    status: Status
    tests: list[TestOutcome] = field(default_factory=list)
    message: str = ""
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_memory_kb: int = 0
    backend: str = ""
    sandbox_id: str = ""
    runtime_fingerprint: str = ""
    image_digest: str = ""  # the Docker image's ID; empty for bwrap, whose runtime the fingerprint names
    harness_version: str = ""
    hash_seed: str = ""
    seed: int = 0
    repeat: int = 0
    anomaly: str | None = None
    attempts: int = 1
    request_digest: str = ""  # the name the request is kept under for replay
    # The suite's setup raised (its traceback, from the judge): every test failed with it.
    # With a reference solution this means the task is broken (verification's BROKEN_SETUP).
    setup_error: str = ""
    # What an exploration found (the explore kind, evaluation/sandbox/harness/explore.py):
    # counts, each mutant's outcome and counterexample, proposed tests. None for other kinds.
    data: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        return data
