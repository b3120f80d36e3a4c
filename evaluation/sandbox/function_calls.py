"""The `function_calls` suite kind: each test calls the solution's function with
arguments and compares what it returned, in any language (drivers/).

A request of this kind becomes a stdio run of one program, the solution with its
language's driver: each test is a fresh process given the test's arguments on stdin
(as tokens), and the judge reads the returned value the driver writes and compares it
with the expected one in the `values` mode (harness/call_values.py), outside the
solution's process. The program depends on the solution and the signature only, never
on the tests, so a compiled solution is built once for all its tests, repeats and
rewards (the compile cache), whatever tests are added later.

    tests = {"signature": {"params": [{"name": "xs", "type": "list[int]"}], "returns": "int"},
             "visible": [{"args": [[1, 2]], "expected": 3}], "hidden": [...],
             "comparator": {"mode": "float", "abs_tol": 1e-6}}   # optional: float tolerances
"""

from __future__ import annotations

import dataclasses
from typing import Any

from evaluation.sandbox import drivers
from evaluation.sandbox.types import RunRequest

KIND = "function_calls"


def is_function_calls(request: RunRequest) -> bool:
    return request.suite_kind == KIND


def compile_note(request: RunRequest) -> str:
    """What a compile error of a function_calls solution says first: most often the
    function is not the one the driver calls."""
    signature = request.tests.get("signature") or {}
    params = ", ".join(f"{p['name']}: {p['type']}" for p in signature.get("params") or ())
    return (
        f"(built with the task's driver, which calls {request.entry_point}({params}) -> {signature.get('returns')} "
        f"as {request.language} declares it: a function of another signature, or a `main` of its own, does not build)"
    )


def as_program_run(request: RunRequest) -> RunRequest:
    """The stdio run of `request`'s solution with its driver. Raises ValueError for a
    signature or language with no driver (the version was validated: a bug of ours)."""
    signature = request.tests.get("signature")
    if not isinstance(signature, dict):
        raise ValueError("a function_calls request needs its signature in tests['signature']")
    source = drivers.program_source(request.language, signature, request.entry_point, request.solution)
    comparator: dict[str, Any] = {"mode": "values", "returns": signature["returns"]}
    tolerances = request.tests.get("comparator") or {}
    for name in ("abs_tol", "rel_tol"):
        if tolerances.get(name) is not None:
            comparator[name] = float(tolerances[name])
    tests = {"comparator": comparator}
    for part in ("visible", "hidden"):
        tests[part] = [
            {"input": drivers.encode_args(signature, case["args"]), "output": case["expected"]}
            for case in request.tests.get(part) or ()
        ]
    return dataclasses.replace(request, suite_kind="stdio", solution=source, tests=tests)
