"""Function tests in every language: a driver, generated in the solution's language,
calls the solution's function with each test's arguments and writes what it returned.

A `function_calls` task declares its function once, language-neutrally:

    {"params": [{"name": "xs", "type": "list[int]"}, {"name": "k", "type": "int"}],
     "returns": "list[int]"}

with the types `int` (64-bit), `float` (a double), `bool`, `str` (Unicode text) and
`list[T]` of any of them (nested; C takes one level). Each test is `{"args": [...],
"expected": ...}` in JSON. `program_source` joins the solution and the driver for its
language (the declaration each language expects is `declaration`'s); the run is then a
stdio run of that program, one fresh process per test (function_calls.py).

What crosses, in both directions, is a stream of whitespace-separated tokens, which
every language reads with its own standard library and no JSON parser:

| type | token(s) |
|---|---|
| int | its decimal digits, `-` first where negative |
| float | a decimal or exponent form that parses back to the same double (Python's repr) |
| bool | `1` or `0` |
| str | `s` followed by the UTF-8 bytes in lowercase hex (`s` alone: the empty string) |
| list[T] | its length, then each element |

The arguments go in on stdin; the driver writes a line `@@tp-result@@` and then the
returned value the same way (a dynamically typed language writes `?` in place of a
value of another type than the declared one). The judge reads what follows the last
such line, outside the solution's process, and compares it with the expected value
(harness/call_values.py): expected values never enter the solution's process, so
printing a fake success teaches nothing.
"""

from __future__ import annotations

from typing import Any

from evaluation.sandbox.drivers import compiled, scripted
from evaluation.sandbox.drivers.value_types import MARKER, encode_args, parse_type

__all__ = ["MARKER", "declaration", "encode_args", "parse_type", "program_source", "supported"]

_BUILDERS = {**compiled.BUILDERS, **scripted.BUILDERS}


def supported(language: str) -> bool:
    return language in _BUILDERS


def program_source(language: str, signature: dict[str, Any], entry_point: str, solution: str) -> str:
    """The solution with its language's driver around it: one source, built and run as a
    program (its line numbers are the solution's own in the compiler's messages)."""
    builder = _builder(language)
    return builder.program(signature, entry_point, solution)


def declaration(language: str, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
    """What a solution in `language` defines: the function (in its class, where the
    language wants one) with `body` (empty by default: a prompt's or a starter's)."""
    return _builder(language).declaration(signature, entry_point, body)


def _builder(language: str) -> Any:
    try:
        return _BUILDERS[language]
    except KeyError:
        raise ValueError(f"no function-call driver for language {language!r}") from None
