"""A function test's result, as its driver wrote it, read and compared with the
expected value (the `values` comparator mode: evaluation/sandbox/drivers/).

The driver writes a line `@@tp-result@@` and then the returned value as tokens (ints
in decimal, floats in any form `float()` reads, bools as 1/0, strings as `s` and their
UTF-8 bytes in hex, lists as their length and then each element, `?` for a value of
another type than declared). Only what follows the last such line is read, so what the
solution printed itself before it returned does not count; anything left over after
the value fails the test, as does a value cut short.

Ints, bools and strings compare exactly; floats within `abs_tol` or `rel_tol` (either
suffices; 1e-9 of each when neither is given), and NaN equals nothing; lists element
by element, their lengths first. A mismatch names the first place that differs
(`result[2][0]`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MARKER = "@@tp-result@@"
DEFAULT_TOL = 1e-9


class _Unreadable(Exception):
    pass


def parse_type(text: str) -> Any:
    text = text.replace(" ", "")
    if text in ("int", "float", "bool", "str"):
        return text
    if text.startswith("list[") and text.endswith("]"):
        return ["list", parse_type(text[5:-1])]
    raise ValueError(f"not a value type: {text!r}")


def type_name(kind: Any) -> str:
    return kind if isinstance(kind, str) else f"list[{type_name(kind[1])}]"


def mismatch(comparator: dict[str, Any], expected: Any, output: str) -> str | None:
    """None if the driver's output holds the expected value; else what differs."""
    kind = parse_type(str(comparator.get("returns") or ""))
    _, sep, tail = output.rpartition("\n" + MARKER + "\n")
    if not sep:
        return "no result: the program ended without its driver writing what the function returned"
    tokens = tail.split()
    try:
        got, used = _read(kind, tokens, 0, "result")
    except _Unreadable as exc:
        return str(exc)
    if used != len(tokens):
        return f"more output after the result: {' '.join(tokens[used : used + 5])[:200]!r}"
    abs_tol, rel_tol = comparator.get("abs_tol"), comparator.get("rel_tol")
    if abs_tol is None and rel_tol is None:
        abs_tol = rel_tol = DEFAULT_TOL
    return _differs(kind, expected, got, "result", float(abs_tol or 0.0), float(rel_tol or 0.0))


def _read(kind: Any, words: list[str], at: int, path: str) -> tuple[Any, int]:
    if at >= len(words):
        raise _Unreadable(f"{path}: the result ends before a {type_name(kind)}")
    word = words[at]
    if word == "?":
        raise _Unreadable(f"{path}: the function returned a value that is not a {type_name(kind)}")
    try:
        if kind == "int":
            return int(word), at + 1
        if kind == "float":
            return float(word), at + 1
        if kind == "bool":
            if word not in ("0", "1"):
                raise ValueError(word)
            return word == "1", at + 1
        if kind == "str":
            if not word.startswith("s"):
                raise ValueError(word)
            return bytes.fromhex(word[1:]).decode("utf-8", "replace"), at + 1
        count = int(word)
        if count < 0:
            raise ValueError(word)
    except ValueError:
        raise _Unreadable(f"{path}: {word[:60]!r} does not read as a {type_name(kind)}") from None
    items, at = [], at + 1
    for index in range(count):
        item, at = _read(kind[1], words, at, f"{path}[{index}]")
        items.append(item)
    return items, at


def _differs(kind: Any, want: Any, got: Any, path: str, abs_tol: float, rel_tol: float) -> str | None:
    if isinstance(kind, list):
        if len(got) != len(want):
            return f"{path}: expected {len(want)} element(s), got {len(got)}"
        for index, (w, g) in enumerate(zip(want, got, strict=True)):
            differs = _differs(kind[1], w, g, f"{path}[{index}]", abs_tol, rel_tol)
            if differs:
                return differs
        return None
    if kind == "float":
        w, g = float(want), float(got)
        diff = abs(w - g)
        if w == g or diff <= abs_tol or diff <= rel_tol * abs(w):
            return None
    elif want == got:
        return None
    return f"{path}: expected {_shown(want)}, got {_shown(got)}"


def _shown(value: Any) -> str:
    return repr(value)[:200]
