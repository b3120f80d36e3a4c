"""The sandbox request of a verification's `explore` execution."""

from __future__ import annotations

import hashlib
from typing import Any

from evaluation.sandbox.run_requests import explore_request_for
from evaluation.sandbox.types import RunRequest

# One run generates and judges every input of a task: more time than one solution's run,
# within what a claim holds (the task's limit plus the staleness margin, executions.py).
EXPLORE_WALL_S = 90.0


def input_seed(seed: int, version_hash: str) -> int:
    """The generator's seed: the configured seed and the version's hash fix every input
    (another version of the task draws other inputs; the same one, the same)."""
    return int(hashlib.sha256(f"{seed}|{version_hash}".encode()).hexdigest()[:12], 16)


def explore_request(execution: Any) -> RunRequest:
    """The reference against its version's tests and every mutant of the same
    verification, on inputs made under the verification's configuration."""
    verification = execution.verification
    version = verification.version
    config = verification.config or {}
    mutants = list(verification.executions.filter(role="mutant").order_by("subject").values_list("subject", "code"))
    return explore_request_for(
        version,
        reference=execution.code,
        mutants=mutants,
        seed=input_seed(int(config.get("input_seed", 0)), version.content_hash),
        inputs=int(config.get("inputs", 200)),
        keep=int(config.get("proposals", 10)),
        precondition=getattr(version, "precondition", "") or "",
        wall_s=EXPLORE_WALL_S,
    )
