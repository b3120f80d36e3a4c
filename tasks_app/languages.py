"""The languages a task's solutions may be written in, and how a stdio task's output
is compared: what a version's content accepts.

The names match evaluation/sandbox/languages.py, which knows how each is built and
run (tasks_app imports nothing of evaluation; a test checks the two agree). Python
is the language of every suite kind; the others run stdio cases for now.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

PYTHON = "python"
LANGUAGES = (
    PYTHON,
    "c",
    "cpp17",
    "cpp20",
    "java",
    "javascript",
    "typescript",
    "go",
    "rust",
    "ruby",
    "php",
    "lua",
    "csharp",
)
OTHER_LANGUAGE_SUITE_KINDS = ("stdio", "function_calls")
# evaluation/sandbox/harness/compare.py's modes, and `checker`: a program of the task's
# (evaluation/sandbox/special_judges.py) judges each output under testlib's contract.
CHECKER_MODE = "checker"
# `interactor`: a program of the task's talks with the solution through pipes, and its
# exit code is the verdict (evaluation/sandbox/interactors.py).
INTERACTOR_MODE = "interactor"
JUDGE_PROGRAM_MODES = (CHECKER_MODE, INTERACTOR_MODE)
COMPARATOR_MODES = ("lines", "exact", "tokens", "float", "unordered_lines", "tokens_nocase", *JUDGE_PROGRAM_MODES)
COMPARATOR_FIELDS = ("mode", "abs_tol", "rel_tol", "language", "source")
MAX_CHECKER_CHARS = 200_000


def language_problem(language: str, suite_kind: str) -> str | None:
    """Why `language` cannot have `suite_kind` tests, or None."""
    if language != PYTHON and suite_kind and suite_kind not in OTHER_LANGUAGE_SUITE_KINDS:
        return (
            f"A {language} solution is judged on stdio cases (suite kind 'stdio') or calls of its function "
            f"(suite kind 'function_calls'), not {suite_kind!r}: assertions, check functions, pytest and "
            "repositories are Python's."
        )
    return None


def parse_comparator(raw: Any, suite_kind: str, error: Callable[[str, str], None]) -> dict[str, Any]:
    """A stdio task's comparator, validated: {} for the default (`lines`). Problems go
    to `error(path, message)`."""
    if raw is None or raw == {}:
        return {}
    if not isinstance(raw, dict):
        error("comparator", f"Expected an object with {', '.join(COMPARATOR_FIELDS)}, got {type(raw).__name__}.")
        return {}
    if suite_kind == "function_calls":
        return _call_tolerances(raw, error)
    if suite_kind and suite_kind != "stdio":
        error("comparator", f"Only stdio tasks compare output; suite kind {suite_kind!r} has its own checks.")
        return {}
    for extra in sorted(set(raw) - set(COMPARATOR_FIELDS)):
        error(f"comparator.{extra}", f"Unknown field. Allowed fields: {', '.join(COMPARATOR_FIELDS)}.")
    mode = raw.get("mode")
    if mode not in COMPARATOR_MODES:
        error("comparator.mode", f"Unknown mode {mode!r}. One of: {', '.join(COMPARATOR_MODES)}.")
        return {}
    if mode in JUDGE_PROGRAM_MODES:
        return _judge_program(raw, mode, error)
    for name in ("language", "source"):
        if raw.get(name) is not None:
            error(f"comparator.{name}", f"Only a checker or an interactor (mode {CHECKER_MODE!r} or "
                                        f"{INTERACTOR_MODE!r}) has a {name}.")  # fmt: skip
    comparator: dict[str, Any] = {"mode": mode}
    for name in ("abs_tol", "rel_tol"):
        if raw.get(name) is None:
            continue
        value = raw[name]
        if mode != "float":
            error(f"comparator.{name}", "A tolerance is only for mode 'float'.")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            error(f"comparator.{name}", f"Expected a number of 0 or more, got {value!r}.")
        else:
            comparator[name] = float(value)
    return comparator


def _call_tolerances(raw: dict[str, Any], error: Callable[[str, str], None]) -> dict[str, Any]:
    """A function test's comparator: only how close a float result must be (mode `float`,
    `abs_tol` and/or `rel_tol`; 1e-9 of each by default)."""
    if raw.get("mode") != "float":
        error("comparator.mode", "A function_calls task's results are compared by their type; only mode 'float' "
                                 "(with abs_tol and/or rel_tol) may change how close a float must be.")  # fmt: skip
        return {}
    comparator: dict[str, Any] = {"mode": "float"}
    for extra in sorted(set(raw) - {"mode", "abs_tol", "rel_tol"}):
        error(f"comparator.{extra}", "Unknown field. Allowed fields: mode, abs_tol, rel_tol.")
    for name in ("abs_tol", "rel_tol"):
        value = raw.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            error(f"comparator.{name}", f"Expected a number of 0 or more, got {value!r}.")
        else:
            comparator[name] = float(value)
    return comparator


def _judge_program(raw: dict[str, Any], mode: str, error: Callable[[str, str], None]) -> dict[str, Any]:
    """A checker or an interactor program: its language and source (built and run like a
    solution, in a sandbox of its own; a checker is called as `checker INPUT OUTPUT
    ANSWER`, an interactor as `interactor INPUT OUTPUT ANSWER` with the solution on its
    stdin and stdout)."""
    what = "checker" if mode == CHECKER_MODE else "interactor"
    for name in ("abs_tol", "rel_tol"):
        if raw.get(name) is not None:
            error(f"comparator.{name}", f"A {what} decides for itself: no tolerance goes with it.")
    language, source = raw.get("language"), raw.get("source")
    if language not in LANGUAGES:
        error("comparator.language", f"Unknown {what} language {language!r}. One of: {', '.join(LANGUAGES)}.")
    if not isinstance(source, str) or not source.strip():
        does = (
            "reads the files named by its arguments (input, output, answer)"
            if mode == CHECKER_MODE
            else "reads the case's input file (its first argument), talks with the solution on stdin and stdout,"
        )
        error("comparator.source", f"A {what} needs its source: a program that {does} and exits 0 (accepted), "
                                   "1 (wrong answer), 2 (presentation error) or 3 (it failed).")  # fmt: skip
    elif len(source) > MAX_CHECKER_CHARS:
        error("comparator.source", f"The {what} is {len(source)} characters; the limit is {MAX_CHECKER_CHARS}.")
    elif "\x00" in source:
        error("comparator.source", f"The {what}'s source contains a NUL character.")
    return {"mode": mode, "language": language, "source": source}
