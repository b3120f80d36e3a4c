"""What a task shows a solver: the example calls with literal answers in its visible tests
and statement, and a stdio task's visible input/output cases. The probes that hard-code
the visible examples answer from these."""

from __future__ import annotations

import ast
import doctest
from typing import Any

from evaluation.verification.probes.constants import CANDIDATE_NAME


def _literal(node: ast.AST) -> Any:
    """The value of a literal expression node; ValueError (or kin) if it is not one."""
    value = ast.literal_eval(node)
    # Only values whose repr reads back: 1e999 is inf, whose repr is a NameError.
    if ast.literal_eval(repr(value)) != value:
        raise ValueError("value does not round-trip through repr")
    return value


def _call_example(call: ast.AST, want: ast.AST, names: set[str]) -> tuple[tuple, dict, Any] | None:
    """(args, kwargs, expected) when `call` calls one of `names` on literals and `want` is a literal."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in names):
        return None
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return None
    try:
        args = tuple(_literal(arg) for arg in call.args)
        kwargs = {k.arg: _literal(k.value) for k in call.keywords}
        return args, kwargs, _literal(want)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _examples_in_source(source: str, names: set[str]) -> list[tuple[tuple, dict, Any]]:
    """Every `f(<literals>) == <literal>` in a test source, and `helper(f(<literals>), <literal>)`
    (a check module's `close(candidate(...), [...])`), for f in `names`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        example = None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            example = _call_example(node.left, node.comparators[0], names)
            example = example or _call_example(node.comparators[0], node.left, names)
        elif isinstance(node, ast.Call) and len(node.args) == 2 and not node.keywords:
            example = _call_example(node.args[0], node.args[1], names)
        if example is not None:
            found.append(example)
    return found


def _examples_in_statement(statement: str, entry_point: str) -> list[tuple[tuple, dict, Any]]:
    """The `>>> f(...)` examples of a statement with their printed results: a solver sees them too."""
    try:
        examples = doctest.DocTestParser().get_examples(statement or "")
    except ValueError:
        return []
    found = []
    for example in examples:
        try:
            call = ast.parse(example.source.strip(), mode="eval").body
            # A fenced example's closing ``` reads to doctest as part of the output.
            want = ast.parse(example.want.split("```")[0].strip(), mode="eval").body
        except (SyntaxError, ValueError):
            continue
        parsed = _call_example(call, want, {entry_point})
        if parsed is not None:
            found.append(parsed)
    return found


def visible_examples(
    *, suite_kind: str, entry_point: str, visible_tests: list, statement: str = ""
) -> list[tuple[tuple, dict, Any]]:
    """(args, kwargs, expected) for every call with a literal answer that a solver can see:
    the visible tests and the statement's examples, first seen first, without repeats."""
    names = {entry_point, CANDIDATE_NAME} if suite_kind == "check_function" else {entry_point}
    found = []
    for test in visible_tests:
        if isinstance(test, str):
            found += _examples_in_source(test, names)
    found += _examples_in_statement(statement, entry_point)
    unique: list[tuple[tuple, dict, Any]] = []
    for example in found:
        if example not in unique:
            unique.append(example)
    return unique


def visible_io(visible_tests: list) -> dict[str, str]:
    """A stdio task's visible cases, input -> output."""
    return {
        case["input"]: case["output"]
        for case in visible_tests
        if isinstance(case, dict) and isinstance(case.get("input"), str) and isinstance(case.get("output"), str)
    }
