"""Multi-language function tasks, in the style of MultiPL-E: one problem in one language a
line, with the prompt in that language (its translated signature and comment), and tests
that are data, the same for every language of the problem.

    {"name": "top_k", "language": "go", "entry_point": "top_k",
     "prompt": "package main\\n\\n// The k largest values, largest first.\\nfunc top_k(xs []int, k int) []int {\\n",
     "statement": "Return the k largest values of xs, largest first.",
     "signature": {"params": [{"name": "xs", "type": "list[int]"}, {"name": "k", "type": "int"}],
                   "returns": "list[int]"},
     "tests": [{"args": [[5, 4, 1], 2], "expected": [5, 4]}, ...],
     "visible": 1,
     "solutions": ["..."], "incorrect_solutions": ["..."],
     "tags": ["sorting"], "time_limit_s": 5, "memory_limit_mb": 256}

MultiPL-E translates each problem's assertions into every language, so its tests hold
the expected values inside the program under test; here they stay data, judged outside
the solution's process (suite kind `function_calls`, docs/languages.md). The first
`visible` tests (1 by default) are shown to the solver, the rest hidden; `statement`
defaults to the prompt. The task's slug is `<name>-<language>`: the same problem in
twelve languages is twelve tasks, tagged with the problem's name so they can be pooled
or compared together. Lines are detected by `signature`.
"""

from __future__ import annotations

from typing import Any

from tasks_app.importers.records import Problems, TaskRecord, build_record, json_type_name, slugify

NAME = "multilang"
MARKER = "signature"
REQUIRED = ("name", "language", "entry_point", "signature", "tests", "solutions")
OPTIONAL = ("prompt", "statement", "visible", "incorrect_solutions", "tags", "time_limit_s", "memory_limit_mb",
            "stop_tokens", "doctests", "original", "prompt_terminology")  # fmt: skip
MAX_SOLUTIONS = 5


def task_slug(obj: dict[str, Any]) -> str | None:
    name, language = obj.get("name"), obj.get("language")
    if not isinstance(name, str) or not isinstance(language, str) or not slugify(name):
        return None
    return f"{slugify(name)[:70].rstrip('-')}-{slugify(language)}"


def to_record(obj: dict[str, Any]) -> TaskRecord:
    problems = Problems()
    problems.check_keys(obj, required=REQUIRED, optional=OPTIONAL)
    name = problems.string(obj, "name")
    prompt = problems.string(obj, "prompt", default="")
    statement = problems.string(obj, "statement", default="") or prompt
    if not statement.strip():
        problems.add("statement", "Give a statement, or a prompt to use as one.")
    tests = obj.get("tests")
    if not isinstance(tests, list) or not tests:
        problems.add("tests", f"Expected a non-empty list of {{args, expected}}, got {json_type_name(tests)}.")
        tests = []
    visible = obj.get("visible", 1)
    if isinstance(visible, bool) or not isinstance(visible, int) or not 0 <= visible < max(len(tests), 1):
        problems.add("visible", f"Expected how many of the {len(tests)} tests are visible (0 to {len(tests) - 1}), "
                                f"got {visible!r}: at least one test stays hidden.")  # fmt: skip
        visible = 0
    solutions = _codes(obj, "solutions", "reference", problems)
    solutions += _codes(obj, "incorrect_solutions", "adversarial", problems)
    problems.raise_if_any()
    content: dict[str, Any] = {
        "statement": statement,
        "language": obj["language"],
        "entry_point": obj["entry_point"],
        "starter_code": prompt,
        "suite_kind": "function_calls",
        "signature": obj["signature"],
        "visible_tests": tests[:visible],
        "hidden_tests": tests[visible:],
        "solutions": solutions,
    }
    for limit in ("time_limit_s", "memory_limit_mb"):
        if limit in obj:
            content[limit] = obj[limit]
    tags = obj.get("tags", [])
    if not isinstance(tags, list):
        tags = [tags]
    problem_tag = slugify(name)[:64]
    return build_record(
        slug=task_slug(obj),
        title=f"{name} ({obj['language']})"[:200],
        tags=list(dict.fromkeys([NAME, *([problem_tag] if problem_tag else []), *tags])),
        content=content,
        problems=problems,
        # A hidden test's index counts from the first hidden one: tests[1:][0] is the second test.
        source_paths={
            "slug": "name",
            "title": "name",
            "starter_code": "prompt",
            "visible_tests": "tests",
            "hidden_tests": f"tests[{visible}:]",
            "solutions": "solutions",
        },
    )


def _codes(obj: dict[str, Any], field: str, role: str, problems: Problems) -> list[dict[str, str]]:
    value = obj.get(field, [])
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        problems.add(field, f"Expected a list of programs (strings), got {json_type_name(value)}.")
        return []
    if field == "solutions" and not value:
        problems.add(field, "At least one correct solution is needed: it is the task's reference.")
    what = "reference" if role == "reference" else "incorrect"
    return [{"role": role, "label": f"{what} {i + 1}", "code": code} for i, code in enumerate(value[:MAX_SOLUTIONS])]
