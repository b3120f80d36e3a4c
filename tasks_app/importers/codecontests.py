"""The CodeContests format (DeepMind's competitive-programming set, one problem a line):
`name`, `description`, `public_tests`, `private_tests`, `generated_tests`,
`solutions`, `incorrect_solutions`, `time_limit`, `memory_limit_bytes`, and more.

A problem becomes a stdio task. Tests are {"input": [...], "output": [...]}: the
public ones are the visible tests, the private ones hidden, and of the generated
ones at most MAX_GENERATED are added to the hidden tests, those whose input and
output each fit the platform's case limit (TASKS_MAX_CODE_BYTES), in their order.
Solutions are {"language": [code, ...], "solution": [text, ...]} with CodeContests'
language codes (1 Python 2, 2 C++, 3 Python 3, 4 Java). The task's language is the
first of Python 3, C++ (as C++17) and Java that has a correct solution; up to
MAX_REFERENCES of its correct solutions become references and up to MAX_WRONG of its
incorrect ones adversarial programs. A problem with no solution in those languages
is refused, saying so.

Fields of the platform's own may be added to a line: `checker` ({"language",
"source"}, a testlib-style checker), `interactor` (the same, for an interactive
problem), `generator` ({"language", "source", "count"?, "validator"?}: a test
generator, as CodeContests+ adds them; docs/languages.md) and `tags`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from tasks_app.importers.records import Problems, TaskRecord, build_record, json_type_name, slugify

NAME = "codecontests"
MARKER = "public_tests"
REQUIRED = ("name", "description", "public_tests", "solutions")
OPTIONAL = (
    "private_tests", "generated_tests", "incorrect_solutions", "time_limit", "memory_limit_bytes", "source",
    "difficulty", "cf_contest_id", "cf_index", "cf_points", "cf_rating", "cf_tags", "is_description_translated",
    "untranslated_description", "input_file", "output_file", "checker", "interactor", "generator", "tags",
)  # fmt: skip
# CodeContests' language codes, in the order a task's language is chosen.
LANGUAGES = ((3, "python"), (2, "cpp17"), (4, "java"))
MAX_REFERENCES = 3
MAX_WRONG = 5
MAX_GENERATED = 50
MAX_TAGS = 8


def task_slug(obj: dict[str, Any]) -> str | None:
    name = obj.get("name")
    suffix = slugify(name) if isinstance(name, str) else ""
    return f"cc-{suffix}"[:80].rstrip("-") if suffix else None


def to_record(obj: dict[str, Any]) -> TaskRecord:
    problems = Problems()
    problems.check_keys(obj, required=REQUIRED, optional=OPTIONAL)
    name = problems.string(obj, "name")
    description = problems.string(obj, "description")
    visible = _tests(obj, "public_tests", problems)
    hidden = _tests(obj, "private_tests", problems) + _generated(obj, problems)
    correct = _solutions(obj, "solutions", problems)
    wrong = _solutions(obj, "incorrect_solutions", problems)
    if obj.get("input_file") or obj.get("output_file"):
        problems.add("input_file", "Problems that read or write named files are not supported: stdio only.")
    problems.raise_if_any()
    language = next((lang for code, lang in LANGUAGES if correct.get(code)), None)
    if language is None:
        found = sorted(correct) or "none"
        problems.add("solutions.language", f"No correct solution in Python 3 (3), C++ (2) or Java (4); found {found}.")
        problems.raise_if_any()
    code = next(code for code, lang in LANGUAGES if lang == language)
    solutions = [
        {"role": "reference", "label": f"reference {i + 1}", "code": text}
        for i, text in enumerate(correct[code][:MAX_REFERENCES])
    ] + [
        {"role": "adversarial", "label": f"incorrect {i + 1}", "code": text}
        for i, text in enumerate(wrong.get(code, [])[:MAX_WRONG])
    ]
    content: dict[str, Any] = {
        "statement": description,
        "language": language,
        "entry_point": "",
        "suite_kind": "stdio",
        "test_setup": "",
        "visible_tests": visible,
        "hidden_tests": hidden or visible,
        "solutions": solutions,
        **_limits(obj, problems),
    }
    if "checker" in obj and "interactor" in obj:
        problems.add("interactor", "A problem has a checker or an interactor, not both.")
    for mode in ("checker", "interactor"):
        if mode in obj:
            if not isinstance(obj[mode], dict):
                problems.add(mode, f"Expected an object {{language, source}}, got {json_type_name(obj[mode])}.")
                problems.raise_if_any()
            content["comparator"] = {"mode": mode, **obj[mode]}
    if "generator" in obj:
        content["test_generator"] = obj["generator"]
    problems.raise_if_any()
    return build_record(
        slug=task_slug(obj),
        title=(name or "CodeContests problem")[:200],
        tags=[NAME, *_tags(obj)],
        content=content,
        problems=problems,
        source_paths={
            "slug": "name",
            "title": "name",
            "statement": "description",
            "visible_tests": "public_tests",
            "hidden_tests": "private_tests",
            "solutions": "solutions",
            "comparator": "interactor" if "interactor" in obj else "checker",
            "test_generator": "generator",
            "time_limit_s": "time_limit",
            "memory_limit_mb": "memory_limit_bytes",
        },
    )


def _tags(obj: dict[str, Any]) -> list[str]:
    """`tags` as given (checked as the platform checks tags), else Codeforces' tags as slugs."""
    if "tags" in obj:
        return obj["tags"] if isinstance(obj["tags"], list) else [obj["tags"]]
    found = obj.get("cf_tags")
    slugs = [slugify(tag) for tag in found if isinstance(tag, str)] if isinstance(found, list) else []
    return list(dict.fromkeys(tag[:64] for tag in slugs if tag))[:MAX_TAGS]


def _tests(obj: dict[str, Any], field: str, problems: Problems) -> list[dict[str, str]]:
    value = obj.get(field)
    if value is None:
        return []
    pairs = _pairs(value, field, ("input", "output"), problems)
    return [{"input": given, "output": expected} for given, expected in pairs]


def _generated(obj: dict[str, Any], problems: Problems) -> list[dict[str, str]]:
    limit = settings.TASKS_MAX_CODE_BYTES
    kept = []
    for case in _tests(obj, "generated_tests", problems):
        if len(case["input"].encode()) <= limit and len(case["output"].encode()) <= limit:
            kept.append(case)
        if len(kept) == MAX_GENERATED:
            break
    return kept


def _solutions(obj: dict[str, Any], field: str, problems: Problems) -> dict[int, list[str]]:
    value = obj.get(field)
    if value is None:
        return {}
    by_language: dict[int, list[str]] = {}
    for code, text in _pairs(value, field, ("language", "solution"), problems):
        if isinstance(code, bool) or not isinstance(code, int):
            problems.add(f"{field}.language", f"Expected language codes (numbers), got {json_type_name(code)}.")
            continue
        by_language.setdefault(code, []).append(text)
    return by_language


def _pairs(value: Any, field: str, keys: tuple[str, str], problems: Problems) -> list[tuple[Any, str]]:
    """Zip CodeContests' parallel lists ({keys[0]: [...], keys[1]: [...]}), checking them."""
    first, second = keys
    if not isinstance(value, dict) or not isinstance(value.get(first), list) or not isinstance(value.get(second), list):
        problems.add(field, f"Expected an object of two lists, {first!r} and {second!r}.")
        return []
    left, right = value[first], value[second]
    if len(left) != len(right):
        problems.add(field, f"{first!r} has {len(left)} items and {second!r} {len(right)}: they must pair up.")
        return []
    checked = (first, second) if field.endswith("tests") else (second,)
    for key, items in ((first, left), (second, right)):
        if key in checked:
            for index, text in enumerate(items):
                if not isinstance(text, str):
                    problems.add(f"{field}.{key}[{index}]", f"Expected a string, got {json_type_name(text)}.")
    pairs = zip(left, right, strict=True)
    return [(a, b) for a, b in pairs if isinstance(b, str) and (first not in checked or isinstance(a, str))]


def _limits(obj: dict[str, Any], problems: Problems) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    time_limit = obj.get("time_limit")
    if time_limit is not None:
        if not isinstance(time_limit, dict) or not all(
            isinstance(time_limit.get(k, 0), int) and not isinstance(time_limit.get(k, 0), bool)
            for k in ("seconds", "nanos")
        ):
            problems.add("time_limit", "Expected {'seconds': integer, 'nanos': integer}.")
        else:
            seconds = time_limit.get("seconds", 0) + time_limit.get("nanos", 0) / 1e9
            if seconds > 0:
                limits["time_limit_s"] = round(seconds, 3)
    memory = obj.get("memory_limit_bytes")
    if memory is not None:
        if isinstance(memory, bool) or not isinstance(memory, int):
            problems.add("memory_limit_bytes", f"Expected a number of bytes, got {json_type_name(memory)}.")
        elif memory > 0:
            limits["memory_limit_mb"] = max(1, memory // (1024 * 1024))
    return limits
