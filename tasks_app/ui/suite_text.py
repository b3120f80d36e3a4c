"""Test suites as text a curator can type in one textarea, and back.

The stored form of a suite is a JSON list (see tasks_app.content). In the form
each suite kind has a text format that round-trips exactly, so opening the
editor and saving without touching anything gives the same content hash:

- assertions: one `assert` per line (a long one may span lines; blank lines
  and comments are ignored);
- check_function and pytest: the module source; several modules are
  separated by a line `# --- module ---`;
- stdio: a JSON list of {"input": ..., "output": ...} objects;
- function_calls: a JSON list of {"args": [...], "expected": ...} objects.

A function_calls task's signature is one line, `(xs: list[int], k: int) -> int`
(`signature_from_text`, `signature_to_text`).
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
    if kind in ("stdio", "function_calls"):
        return _parse_json_cases(text, kind)
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
    if kind in ("stdio", "function_calls"):
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


def _parse_json_cases(text: str, kind: str) -> ParsedSuite:
    try:
        cases = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteTextError(f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from exc
    if not isinstance(cases, list):
        fields = '"input": ..., "output": ...' if kind == "stdio" else '"args": [...], "expected": ...'
        raise SuiteTextError(f"Expected a JSON list of {{{fields}}} objects.")
    return ParsedSuite(cases, [f"case {i}" for i in range(1, len(cases) + 1)])


_PARAM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.+?)\s*$")


def signature_from_text(text: str) -> dict[str, Any]:
    """`(xs: list[int], k: int) -> int` as a signature object; the types are checked by
    the content's own validation (tasks_app/function_signatures.py)."""
    text = (text or "").strip()
    head, arrow, returns = text.rpartition("->")
    head = head.strip()
    if not arrow or not head.startswith("(") or not head.endswith(")") or not returns.strip():
        raise SuiteTextError("Write it as (name: type, ...) -> type, e.g. (xs: list[int], k: int) -> int.")
    params = []
    inside = head[1:-1].strip()
    for number, part in enumerate(_split_params(inside) if inside else [], 1):
        match = _PARAM.match(part)
        if not match:
            raise SuiteTextError(f"Parameter {number} ({part.strip()!r}) is not name: type.")
        params.append({"name": match[1], "type": match[2].replace(" ", "")})
    return {"params": params, "returns": returns.strip().replace(" ", "")}


def signature_to_text(signature: dict[str, Any]) -> str:
    if not signature:
        return ""
    params = ", ".join(f"{p['name']}: {p['type']}" for p in signature.get("params") or ())
    return f"({params}) -> {signature.get('returns', '')}"


def _split_params(text: str) -> list[str]:
    """Commas between parameters, not those inside a type's brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts
