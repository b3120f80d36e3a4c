"""Run requests built from task versions: the one place that maps a version's
content and limits onto what a sandbox run needs."""

from __future__ import annotations

from typing import Any

from evaluation.sandbox.types import Limits, RunRequest


def limits_for(version: Any) -> Limits:
    seconds = float(version.time_limit_s)
    return Limits(wall_s=seconds, cpu_s=seconds, memory_mb=int(version.memory_limit_mb))


def run_request_for(version: Any, code: str, *, seed: int = 0, repeat: int = 0) -> RunRequest:
    """A request to run `code` against every test (visible and hidden) of `version`."""
    return RunRequest(
        suite_kind=version.suite_kind,
        solution=code,
        tests={
            "setup": version.test_setup,
            "visible": list(version.visible_tests),
            "hidden": list(version.hidden_tests),
        },
        entry_point=version.entry_point,
        limits=limits_for(version),
        seed=seed,
        repeat=repeat,
    )
