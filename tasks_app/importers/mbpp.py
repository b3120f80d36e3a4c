"""The MBPP format: `task_id`, `text`, `code`, `test_list`, and optionally
`test_setup_code` and `challenge_test_list`.

Tests are single `assert` lines, the platform's assertions suite kind. MBPP
names no entry point, so it is read from the first test: the function it
calls that the reference defines.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

from tasks_app.importers.records import Problems, TaskRecord, build_record, json_type_name, slugify
from tasks_app.python_source import compile_error, top_level_names

NAME = "mbpp"
MARKER = "test_list"
REQUIRED = ("task_id", "text", "code", "test_list")
OPTIONAL = ("test_setup_code", "challenge_test_list")
MAX_TITLE_CHARS = 80


def task_slug(obj: dict[str, Any]) -> str | None:
    task_id = obj.get("task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)):
        return None
    suffix = slugify(str(task_id))
    return f"mbpp-{suffix}" if suffix else None


def title_from_text(text: str) -> str:
    """The first sentence, without its full stop, shortened at a word to at most 80 characters."""
    words = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0].rstrip(".")
    if len(sentence) <= MAX_TITLE_CHARS:
        return sentence
    cut = sentence[: MAX_TITLE_CHARS - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def called_function(test: str, reference: str) -> str | None:
    """The function under test in one assertion.

    `assert set(f(x)) == set(y)` calls `set` before `f`, so the first call is
    not enough: prefer a name the reference defines, then any name that is
    not a builtin.
    """
    if compile_error(test):
        return None
    calls = [
        node for node in ast.walk(ast.parse(test)) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    names = [c.func.id for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]
    defined = top_level_names(reference) if not compile_error(reference) else set()
    for name in names:
        if name in defined:
            return name
    return next((name for name in names if not hasattr(builtins, name)), None)


def _test_list(obj: dict[str, Any], name: str, problems: Problems) -> list[Any]:
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(name, f"Expected a list of assertions, got {json_type_name(value)}.")
        return []
    return value


def to_record(obj: dict[str, Any]) -> TaskRecord:
    problems = Problems()
    problems.check_keys(obj, required=REQUIRED, optional=OPTIONAL)
    slug = task_slug(obj)
    if "task_id" in obj and slug is None:
        problems.add("task_id", "Expected a number or a string with letters or digits.")
    text = problems.string(obj, "text")
    code = problems.string(obj, "code")
    setup = problems.string(obj, "test_setup_code", default="")
    tests = _test_list(obj, "test_list", problems)
    challenge = _test_list(obj, "challenge_test_list", problems)
    if "test_list" in obj and isinstance(obj["test_list"], list) and not tests:
        problems.add("test_list", "At least one test is required.")
    problems.raise_if_any()

    entry_point = called_function(tests[0], code) if isinstance(tests[0], str) else None
    if entry_point is None:
        problems.add("test_list[0]", "Cannot tell which function the tests call: no call to a function found.")
        # Without an entry point the content checks would only repeat this problem.
        problems.raise_if_any()
    hidden_source = "challenge_test_list" if challenge else "test_list"
    content = {
        "statement": text,
        "entry_point": entry_point or "",
        "suite_kind": "assertions",
        "test_setup": setup,
        "visible_tests": tests,
        "hidden_tests": challenge or tests,
        "solutions": [{"role": "reference", "label": "reference", "code": code}],
    }
    return build_record(
        slug=slug,
        title=title_from_text(text) or f"MBPP {obj['task_id']}",
        tags=[NAME],
        content=content,
        problems=problems,
        source_paths={
            "slug": "task_id",
            "statement": "text",
            "test_setup": "test_setup_code",
            "visible_tests": "test_list",
            "hidden_tests": hidden_source,
            "solutions": "code",
            "solutions[0].code": "code",
        },
    )
