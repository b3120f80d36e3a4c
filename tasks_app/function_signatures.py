"""Function tests in any language (suite kind `function_calls`): the function's
signature, declared once for every language, and tests that are data.

    "signature": {"params": [{"name": "xs", "type": "list[int]"}, {"name": "k", "type": "int"}],
                  "returns": "list[int]"}
    "hidden_tests": [{"args": [[3, 1, 2], 2], "expected": [1, 2]}, ...]

Types: `int` (a 64-bit signed integer), `float` (a finite double), `bool`, `str`
(Unicode text without NUL) and `list[T]` of any of them, nested to any depth except in
C, which takes lists of scalars only (as a pointer and a length). Each argument and
expected value is checked against its type here, so a test a driver cannot pass on
never reaches a sandbox. How each language declares the function, and how its driver
calls it, is evaluation/sandbox/drivers/ (this app imports nothing of evaluation; a
test checks the two read types alike).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

KIND = "function_calls"
SCALARS = ("int", "float", "bool", "str")
SIGNATURE_FIELDS = ("params", "returns")
PARAM_FIELDS = ("name", "type")
CASE_FIELDS = ("args", "expected")
MAX_PARAMS = 16
MAX_NESTING = 4
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
# Names no language here lets a parameter have (and the drivers' own prefix).
_RESERVED_WORDS = """
and as auto bool break case catch char class const continue def default del do double elif else end enum
extern false final float fn for func function go goto if impl import in int interface is let long loop
match mod new nil not null object or package private protected public return self short signed sizeof
static string struct super switch this throw true try type typeof union unsigned use var void while with
yield
"""
RESERVED = frozenset(_RESERVED_WORDS.split())

Error = Callable[[str, str], None]


def parse_type(text: str) -> tuple[Any, ...] | None:
    """The type's tree (`("list", ("int",))`), or None when it is not one."""
    text = text.replace(" ", "")
    if text in SCALARS:
        return (text,)
    if text.startswith("list[") and text.endswith("]"):
        inner = parse_type(text[5:-1])
        return ("list", inner) if inner is not None else None
    return None


def type_text(kind: tuple[Any, ...]) -> str:
    return kind[0] if kind[0] != "list" else f"list[{type_text(kind[1])}]"


def _depth(kind: tuple[Any, ...]) -> int:
    return 0 if kind[0] != "list" else 1 + _depth(kind[1])


def parse_signature(raw: Any, suite_kind: str, language: str, error: Error) -> dict[str, Any]:
    """The signature of a function_calls task, normalised ({} for the other kinds)."""
    if suite_kind != KIND:
        if raw not in (None, {}):
            error("signature", f"Only for suite kind {KIND!r}: the other kinds' tests call the function themselves.")
        return {}
    if not isinstance(raw, dict):
        error("signature", 'Required for function_calls: {"params": [{"name", "type"}, ...], "returns": type}.')
        return {}
    for extra in sorted(set(raw) - set(SIGNATURE_FIELDS)):
        error(f"signature.{extra}", f"Unknown field. Allowed fields: {', '.join(SIGNATURE_FIELDS)}.")
    params = raw.get("params", [])
    if not isinstance(params, list):
        error("signature.params", f"Expected a list of {{name, type}}, got {type(params).__name__}.")
        params = []
    if len(params) > MAX_PARAMS:
        error("signature.params", f"{len(params)} parameters; at most {MAX_PARAMS}.")
    out: list[dict[str, str]] = []
    names: set[str] = set()
    for index, param in enumerate(params):
        path = f"signature.params[{index}]"
        if not isinstance(param, dict):
            error(path, f'Expected {{"name": ..., "type": ...}}, got {type(param).__name__}.')
            continue
        for extra in sorted(set(param) - set(PARAM_FIELDS)):
            error(f"{path}.{extra}", "Unknown field. Allowed fields: name, type.")
        name = param.get("name")
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            error(f"{path}.name", f"{name!r} is not a name every language takes: a letter, then letters, "
                                  "digits or _ (64 at most).")  # fmt: skip
        elif name.lower() in RESERVED or name.startswith("tp_"):
            error(f"{path}.name", f"{name!r} is a reserved word in some language here; choose another name.")
        elif name in names:
            error(f"{path}.name", f"Duplicate parameter {name!r}.")
        else:
            names.add(name)
        kind = _type_at(param.get("type"), f"{path}.type", language, error)
        out.append({"name": name if isinstance(name, str) else "", "type": type_text(kind) if kind else ""})
    returns = _type_at(raw.get("returns"), "signature.returns", language, error)
    return {"params": out, "returns": type_text(returns) if returns else ""}


def _type_at(raw: Any, path: str, language: str, error: Error) -> tuple[Any, ...] | None:
    kind = parse_type(raw) if isinstance(raw, str) else None
    if kind is None:
        error(path, f"{raw!r} is not a type: one of {', '.join(SCALARS)}, or list[T] of one.")
        return None
    if _depth(kind) > MAX_NESTING:
        error(path, f"Lists nest {MAX_NESTING} deep at most.")
        return None
    if language == "c" and _depth(kind) > 1:
        error(path, "C takes lists of scalars only (a pointer and a length); not lists of lists.")
        return None
    return kind


def parse_case(item: Any, signature: dict[str, Any], path: str, error: Error) -> dict[str, Any]:
    """One test, {"args": [...], "expected": value}, checked against the signature."""
    if not isinstance(item, dict):
        error(path, f'Expected {{"args": [...], "expected": ...}}, got {type(item).__name__}.')
        return {}
    for extra in sorted(set(item) - set(CASE_FIELDS)):
        error(f"{path}.{extra}", "Unknown field. Allowed fields: args, expected.")
    for name in CASE_FIELDS:
        if name not in item:
            error(f"{path}.{name}", "This field is required.")
    args, expected = item.get("args", []), item.get("expected")
    params = signature.get("params") or []
    if not isinstance(args, list):
        error(f"{path}.args", f"Expected a list of arguments, got {type(args).__name__}.")
        return {}
    if len(args) != len(params):
        error(f"{path}.args", f"{len(args)} argument(s); the signature has {len(params)}.")
        return {}
    if not signature.get("returns") or any(not p.get("type") for p in params):
        return {"args": args, "expected": expected}  # the signature's own errors are reported
    for index, (param, value) in enumerate(zip(params, args, strict=True)):
        _check_value(value, parse_type(param["type"]), f"{path}.args[{index}]", error)
    if "expected" in item:
        _check_value(expected, parse_type(signature["returns"]), f"{path}.expected", error)
    normal = {"args": [_normal(v, parse_type(p["type"])) for p, v in zip(params, args, strict=True)]}
    normal["expected"] = _normal(expected, parse_type(signature["returns"]))
    return normal


def _check_value(value: Any, kind: Any, path: str, error: Error) -> None:
    name = kind[0]
    if name == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            error(path, f"Expected an int, got {_shown(value)}.")
        elif not INT_MIN <= value <= INT_MAX:
            error(path, f"{value} does not fit in 64 bits.")
    elif name == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            error(path, f"Expected a finite number, got {_shown(value)}.")
    elif name == "bool":
        if not isinstance(value, bool):
            error(path, f"Expected true or false, got {_shown(value)}.")
    elif name == "str":
        if not isinstance(value, str):
            error(path, f"Expected a string, got {_shown(value)}.")
        elif "\x00" in value:
            error(path, "A string may not contain NUL (C strings end there).")
    elif not isinstance(value, list):
        error(path, f"Expected a {type_text(kind)}, got {_shown(value)}.")
    else:
        for index, item in enumerate(value):
            _check_value(item, kind[1], f"{path}[{index}]", error)


def _normal(value: Any, kind: Any) -> Any:
    """Floats as floats (an expected 2 of a float function is 2.0): one canonical form."""
    if kind is None:
        return value
    if kind[0] == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind[0] == "list" and isinstance(value, list):
        return [_normal(item, kind[1]) for item in value]
    return value


def _shown(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {value!r}"[:80]
