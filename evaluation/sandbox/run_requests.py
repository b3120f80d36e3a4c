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
    tests: dict[str, Any] = {
        "setup": version.test_setup,
        "visible": list(version.visible_tests),
        "hidden": list(version.hidden_tests),
    }
    if getattr(version, "comparator", None):  # only when set: every earlier request keeps its digest
        tests["comparator"] = dict(version.comparator)
    if getattr(version, "signature", None):  # function_calls: what the driver reads and the judge compares
        tests["signature"] = dict(version.signature)
    return RunRequest(
        suite_kind=version.suite_kind,
        solution=code,
        tests=tests,
        entry_point=version.entry_point,
        limits=limits_for(version),
        seed=seed,
        repeat=repeat,
        language=getattr(version, "language", "python") or "python",
    )


# The suite kinds an exploration can capture calls from: a Python function's tests.
EXPLORED_KINDS = ("check_function", "assertions")
EXPLORE_WALL_S = 60.0


def explore_request_for(
    version: Any,
    *,
    reference: str,
    mutants: list[tuple[str, str]],
    seed: int,
    inputs: int,
    keep: int,
    precondition: str = "",
    wall_s: float | None = None,
    call_budget_s: float | None = None,
) -> RunRequest:
    """A request to explore `version` (the explore run kind): capture the calls its
    tests make to `reference`, generate `inputs` new inputs from them, run each of
    `mutants` ((id, source) pairs) on the valid ones and shrink what tells it apart,
    and propose up to `keep` tests. `call_budget_s` is the reference's per-call budget;
    by default the harness derives it from the slowest call the tests make."""
    if version.suite_kind not in EXPLORED_KINDS:
        raise ValueError(f"only {' and '.join(EXPLORED_KINDS)} tasks can be explored, not {version.suite_kind!r}")
    seconds = float(wall_s) if wall_s is not None else EXPLORE_WALL_S
    tests: dict[str, Any] = {
        "suite_kind": version.suite_kind,
        "setup": version.test_setup,
        "visible": list(version.visible_tests),
        "hidden": list(version.hidden_tests),
        "precondition": precondition,
        "mutants": [{"id": str(mutant_id), "code": code} for mutant_id, code in mutants],
        "seed": int(seed),
        "inputs": int(inputs),
        "keep": int(keep),
        # What a mutant's timeout must outlast to prove it wrong: the limit its test would run under.
        "test_limit_s": float(version.time_limit_s),
    }
    if call_budget_s is not None:
        tests["call_budget_s"] = float(call_budget_s)
    return RunRequest(
        suite_kind="explore",
        solution=reference,
        tests=tests,
        entry_point=version.entry_point,
        limits=Limits(wall_s=seconds, cpu_s=seconds, memory_mb=int(version.memory_limit_mb)),
        seed=int(seed),
    )
