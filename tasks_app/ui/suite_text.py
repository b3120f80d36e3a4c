"""Test suites as text a curator can type in one textarea, and back.

The stored form of a suite is a JSON list (see tasks_app.content). In the form
each suite kind has a text format that round-trips exactly, so opening the
editor and saving without touching anything gives the same content hash:

- assertions: one `assert` per line (a long one may span lines; blank lines
  and comments are ignored);
- check_function and pytest: the module source; several modules are
  separated by a line `# --- module ---`;
- stdio: a JSON list of {"input": ..., "output": ...} objects.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

MODULE_SEPARATOR = "# --- module ---"
_MODULE_SPLIT = re.compile(r"\n?^" + re.escape(MODULE_SEPARATOR) + r"[ \t]*$\n?", re.MULTILINE)


class SuiteTextError(ValueError):
    """The text cannot be turned into a list of tests; the message names the line."""


@dataclass(frozen=True)
class ParsedSuite:
    tests: list[Any]
    # How to name test i in an error message ("line 3", "case 2"), so a problem
    # the content validator reports as hidden_tests[1] points at the right place.
    locators: list[str]


def parse_suite_text(kind: str, text: str) -> ParsedSuite:
    text = (text or "").replace("\r\n", "\n")
    if not text.strip():
        return ParsedSuite([], [])
    if kind == "assertions":
        return _parse_assertions(text)
    if kind == "stdio":
        return _parse_stdio(text)
    if kind in ("check_function", "pytest"):
        modules = [m for m in _MODULE_SPLIT.split(text) if m.strip()]
        locators = [f"module {i}" for i in range(1, len(modules) + 1)] if len(modules) > 1 else [""]
        return ParsedSuite(modules, locators)
    # Unknown kind: the suite-kind field carries the error; pass the text through
    # unsplit so the tests field does not report a second, misleading problem.
    return ParsedSuite([text], [""])


def suite_to_text(kind: str, tests: list[Any]) -> str:
    if not tests:
        return ""
    if kind == "stdio":
        return json.dumps(tests, indent=2, ensure_ascii=False)
    if kind == "assertions":
        return "\n".join(str(t) for t in tests)
    return f"\n{MODULE_SEPARATOR}\n".join(str(t) for t in tests)


def _parse_assertions(text: str) -> ParsedSuite:
    source = textwrap.dedent(text)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SuiteTextError(f"Line {exc.lineno}: syntax error: {exc.msg}.") from exc
    except ValueError as exc:  # a NUL byte
        raise SuiteTextError(f"Cannot be parsed: {exc}.") from exc
    tests = [ast.get_source_segment(source, node) or "" for node in tree.body]
    return ParsedSuite(tests, [f"line {node.lineno}" for node in tree.body])


def _parse_stdio(text: str) -> ParsedSuite:
    try:
        cases = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteTextError(f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from exc
    if not isinstance(cases, list):
        raise SuiteTextError('Expected a JSON list of {"input": ..., "output": ...} objects.')
    return ParsedSuite(cases, [f"case {i}" for i in range(1, len(cases) + 1)])
