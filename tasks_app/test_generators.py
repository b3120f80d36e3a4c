"""A stdio task's test generator: what a version's content accepts.

    {"language": "python", "source": "...", "count": 20,
     "validator": {"language": "cpp17", "source": "..."}}

The generator is a program called as `generator SEED` that prints one test input on
stdout; the validator, when there is one, is called with an input on stdin and exits
0 when it is valid (anything else, with its message on stderr, when not). The
reference writes each input's answer. Verification runs them (evaluation/verification/
generated/stdio.py): `count` inputs, each judged by the validator, answered by the
reference, then every mutant and wrong solution is run on them, and the inputs that
catch what the task's own tests miss are proposed as hidden tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tasks_app.languages import INTERACTOR_MODE, LANGUAGES, MAX_CHECKER_CHARS

FIELDS = ("language", "source", "count", "validator")
DEFAULT_COUNT = 20
MAX_COUNT = 200


def parse_test_generator(raw: Any, suite_kind: str, comparator: dict[str, Any],
                         error: Callable[[str, str], None]) -> dict[str, Any]:  # fmt: skip
    """The version's generator, validated ({} for none). Problems go to `error(path, message)`."""
    if raw is None or raw == {}:
        return {}
    if not isinstance(raw, dict):
        error("test_generator", f"Expected an object with {', '.join(FIELDS)}, got {type(raw).__name__}.")
        return {}
    if suite_kind and suite_kind != "stdio":
        error("test_generator", f"Only stdio tasks have a test generator; suite kind {suite_kind!r} has its own "
                                "generated inputs (docs/generated-tests.md).")  # fmt: skip
        return {}
    if (comparator or {}).get("mode") == INTERACTOR_MODE:
        error("test_generator", "An interactive task has no generated tests: its answers are the interactor's "
                                "to judge, not the reference's output to record.")  # fmt: skip
        return {}
    for extra in sorted(set(raw) - set(FIELDS)):
        error(f"test_generator.{extra}", f"Unknown field. Allowed fields: {', '.join(FIELDS)}.")
    parsed: dict[str, Any] = _program(raw, "test_generator", "generator", error)
    count = raw.get("count", DEFAULT_COUNT)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        error("test_generator.count", f"Expected a whole number from 1 to {MAX_COUNT}, got {count!r}.")
    else:
        parsed["count"] = count
    validator = raw.get("validator")
    if validator not in (None, {}):
        if not isinstance(validator, dict):
            error("test_generator.validator", f"Expected an object with language and source, got "
                                              f"{type(validator).__name__}.")  # fmt: skip
        else:
            for extra in sorted(set(validator) - {"language", "source"}):
                error(f"test_generator.validator.{extra}", "Unknown field. Allowed fields: language, source.")
            parsed["validator"] = _program(validator, "test_generator.validator", "validator", error)
    return parsed


def _program(raw: dict[str, Any], path: str, what: str, error: Callable[[str, str], None]) -> dict[str, Any]:
    language, source = raw.get("language"), raw.get("source")
    if language not in LANGUAGES:
        error(f"{path}.language", f"Unknown {what} language {language!r}. One of: {', '.join(LANGUAGES)}.")
    if not isinstance(source, str) or not source.strip():
        does = (
            "prints one test input for the seed given as its first argument"
            if what == "generator"
            else "reads one input on stdin and exits 0 when it is valid (non-zero, saying why on stderr, if not)"
        )
        error(f"{path}.source", f"A {what} needs its source: a program that {does}.")
    elif len(source) > MAX_CHECKER_CHARS:
        error(f"{path}.source", f"The {what} is {len(source)} characters; the limit is {MAX_CHECKER_CHARS}.")
    elif "\x00" in source:
        error(f"{path}.source", f"The {what}'s source contains a NUL character.")
    return {"language": language, "source": source}
