"""Which hidden tests of a version were generated, and from what: the records'
validation, and their carrying over when a version is edited (tasks_app.content
keeps them in the version's content and its hash, only when set)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tasks_app.canonical import canonical_json

# What a generated hidden test records of where it came from (evaluation's input generation):
# its place among the hidden tests, the generator and seed that made its input, why it was
# made (a counterexample to a surviving mutant, or a hidden test for an all-visible suite),
# the mutant it kills, and the version whose verification proposed it.
GENERATED_TEST_FIELDS = ("hidden_index", "generator", "seed", "reason", "mutant", "from_version")
GENERATED_TEST_REASONS = ("counterexample", "hidden_for_visible")
# Suite kinds whose tests call one entry point with plain arguments: where inputs can be
# generated and a precondition applies.
CALL_SUITE_KINDS = ("assertions", "check_function")


def check_precondition(
    source: str, suite_kind: str, code_limit: int, defines: Callable[[str], bool], error: Callable[[str, str], None]
) -> str:
    """A version's precondition source (already read as code), its problems sent to
    `error`: only for call suites, within the size limit, defining `precondition`
    (`defines` says whether the source defines it at top level)."""
    if not source.strip():
        return ""
    if suite_kind and suite_kind not in CALL_SUITE_KINDS:
        error("precondition", f"Only for suite kinds {' and '.join(CALL_SUITE_KINDS)}: inputs are generated "
                              "for tests that call the entry point.")  # fmt: skip
    elif len(source.encode()) > code_limit:
        error("precondition", f"Longer than {code_limit} bytes.")
    elif not defines(source):
        error("precondition", "Define a function precondition(...) taking the entry point's arguments and "
                              "returning True for a valid input.")  # fmt: skip
    return source


def parse_generated_tests(
    value: Any, hidden_count: int, error: Callable[[str, str], None], type_name: Callable[[Any], str]
) -> list[dict[str, Any]]:
    """Which hidden tests were generated, and from what (GENERATED_TEST_FIELDS)."""
    if value is None:
        return []
    if not isinstance(value, list):
        error("generated_tests", f"Expected a list, got {type_name(value)}.")
        return []
    entries, seen = [], set()
    for i, item in enumerate(value):
        path = f"generated_tests[{i}]"
        if not isinstance(item, dict):
            error(path, f"Expected an object, got {type_name(item)}.")
            continue
        unknown = sorted(set(item) - set(GENERATED_TEST_FIELDS))
        missing = [name for name in ("hidden_index", "generator", "seed", "reason") if name not in item]
        if unknown or missing:
            problems = ([f"unknown field(s): {', '.join(unknown)}"] if unknown else []) + (
                [f"missing field(s): {', '.join(missing)}"] if missing else []
            )
            error(path, "; ".join(problems).capitalize() + ".")
            continue
        index, seed = item["hidden_index"], item["seed"]
        if type(index) is not int or not 0 <= index < hidden_count:
            error(f"{path}.hidden_index", f"Expected the index of a hidden test (0 to {hidden_count - 1}).")
            continue
        if index in seen:
            error(f"{path}.hidden_index", f"Hidden test {index} is listed twice.")
            continue
        if type(seed) is not int:
            error(f"{path}.seed", "Expected an integer.")
            continue
        if item["reason"] not in GENERATED_TEST_REASONS:
            error(f"{path}.reason", f"Expected one of {', '.join(GENERATED_TEST_REASONS)}.")
            continue
        texts = {name: item.get(name, "") for name in ("generator", "mutant", "from_version")}
        bad = [name for name, text in texts.items() if not isinstance(text, str) or len(text) > 200]
        if bad:
            error(f"{path}.{bad[0]}", "Expected a string of at most 200 characters.")
            continue
        seen.add(index)
        entries.append({"hidden_index": index, "seed": seed, "reason": item["reason"], **texts})
    return sorted(entries, key=lambda entry: entry["hidden_index"])


def generated_tests_carried(
    previous_hidden: list[Any], previous_generated: list[dict[str, Any]], hidden: list[Any]
) -> list[dict[str, Any]]:
    """The generated-test records of an edited version: a generated hidden test kept
    unchanged keeps its record (at its new index); one edited or removed loses it, as it
    is no longer what the generator made."""
    index_of: dict[str, int] = {}
    for index, test in enumerate(hidden):
        index_of.setdefault(canonical_json(test), index)
    carried = []
    for entry in previous_generated:
        old = entry.get("hidden_index")
        if not isinstance(old, int) or not 0 <= old < len(previous_hidden):
            continue
        new = index_of.pop(canonical_json(previous_hidden[old]), None)
        if new is not None:
            carried.append({**entry, "hidden_index": new})
    return sorted(carried, key=lambda entry: entry["hidden_index"])
