"""The HumanEval format: `task_id`, `prompt`, `canonical_solution`, `test`, `entry_point`.

`prompt` is a signature with a docstring and `canonical_solution` only the
body, so the reference is their concatenation; `test` defines
`check(candidate)`, which is the platform's check_function suite kind.
"""

from __future__ import annotations

import re
from typing import Any

from tasks_app.importers.records import Problems, TaskRecord, build_record, slugify

NAME = "humaneval"
MARKER = "canonical_solution"
FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
SOURCE_PATHS = {
    "statement": "prompt",
    "starter_code": "prompt",
    "hidden_tests": "test",
    "hidden_tests[0]": "test",
    "solutions": "canonical_solution",
    "solutions[0].code": "canonical_solution",
}


def task_slug(obj: dict[str, Any]) -> str | None:
    task_id = obj.get("task_id")
    return (slugify(task_id) or None) if isinstance(task_id, str) else None


def title_from_entry_point(entry_point: str) -> str:
    words = " ".join(entry_point.replace("_", " ").split())
    return words[:1].upper() + words[1:]


def statement_for(entry_point: str, prompt: str) -> str:
    # A fence longer than any backtick run inside the prompt keeps the block closed.
    longest = max((len(run) for run in re.findall(r"`+", prompt)), default=0)
    fence = "`" * max(3, longest + 1)
    return (
        f"Complete the function `{entry_point}` so that it does what its docstring says.\n\n"
        f"{fence}python\n{prompt.rstrip()}\n{fence}\n"
    )


def to_record(obj: dict[str, Any]) -> TaskRecord:
    problems = Problems()
    problems.check_keys(obj, required=FIELDS)
    task_id, prompt, solution, test, entry_point = (problems.string(obj, name) for name in FIELDS)
    problems.raise_if_any()
    content = {
        "statement": statement_for(entry_point, prompt),
        "entry_point": entry_point,
        "starter_code": prompt,
        "suite_kind": "check_function",
        "visible_tests": [],
        "hidden_tests": [test],
        "solutions": [
            {
                "role": "reference",
                "label": "canonical",
                "code": prompt + solution,
                "note": "Canonical solution from the source data set.",
            }
        ],
    }
    return build_record(
        slug=slugify(task_id),
        title=title_from_entry_point(entry_point) or task_id,
        tags=[NAME],
        content=content,
        source_paths={**SOURCE_PATHS, "slug": "task_id"},
    )
