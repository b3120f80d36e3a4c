"""How a stdio test's output is compared with the expected one: a comparator per task.

Modes (`comparator["mode"]`):
- `lines` (the default): line by line, trailing whitespace of each line and trailing
  empty lines ignored;
- `exact`: byte for byte (a final newline included);
- `tokens`: the whitespace-separated tokens, in order;
- `float`: tokens, where both are numbers within `abs_tol` or `rel_tol` of the
  expected one (either suffices; 1e-9 absolute if neither is given), the others exact;
- `unordered_lines`: the same lines (as `lines` normalises them) in any order, each as
  many times;
- `tokens_nocase`: tokens, compared case-insensitively: only where a task asks for it;
- `values`: a function test's result as its driver wrote it, read by the declared
  return type (`returns`) and compared with the expected value (call_values.py).

Nothing compares case-insensitively by default, and output cut short or followed by
more never passes: every mode compares the whole of both. Each mismatch says where.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MODES = ("lines", "exact", "tokens", "float", "unordered_lines", "tokens_nocase", "values")


def mismatch(comparator: dict[str, Any] | None, expected: Any, got: str) -> str | None:
    """None if `got` is accepted; else what differs, for the test's message."""
    comparator = comparator or {}
    mode = comparator.get("mode") or "lines"
    if mode == "values":
        from . import call_values  # only function tests need it

        return call_values.mismatch(comparator, expected, got)
    if mode == "exact":
        return None if got == expected else _first_char(expected, got)
    if mode == "lines":
        return _sequence(_lines(expected), _lines(got), "line", str.__eq__)
    if mode == "unordered_lines":
        return _unordered(_lines(expected), _lines(got))
    if mode == "tokens":
        return _sequence(expected.split(), got.split(), "token", str.__eq__)
    if mode == "tokens_nocase":
        return _sequence(expected.split(), got.split(), "token", lambda a, b: a.casefold() == b.casefold())
    if mode == "float":
        abs_tol = comparator.get("abs_tol")
        rel_tol = comparator.get("rel_tol")
        if abs_tol is None and rel_tol is None:
            abs_tol = 1e-9
        return _sequence(expected.split(), got.split(), "token", _numbers_close(abs_tol, rel_tol))
    return f"unknown comparator mode {mode!r}"


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _sequence(expected: list[str], got: list[str], unit: str, equal: Any) -> str | None:
    for number, (want, have) in enumerate(zip(expected, got, strict=False), 1):
        if not equal(want, have):
            return f"{unit} {number}: expected {want[:200]!r}, got {have[:200]!r}"
    if len(got) < len(expected):
        return f"output ended after {len(got)} {unit}(s); expected {len(expected)}"
    if len(got) > len(expected):
        return f"output has {len(got) - len(expected)} extra {unit}(s) after the expected {len(expected)}"
    return None


def _unordered(expected: list[str], got: list[str]) -> str | None:
    counts: dict[str, int] = {}
    for line in expected:
        counts[line] = counts.get(line, 0) + 1
    for line in got:
        counts[line] = counts.get(line, 0) - 1
    missing = [line for line, n in counts.items() if n > 0]
    extra = [line for line, n in counts.items() if n < 0]
    if not missing and not extra:
        return None
    parts = [f"{what} line {lines[0][:200]!r}" + (f" and {len(lines) - 1} more" if len(lines) > 1 else "")
             for what, lines in (("missing", missing), ("unexpected", extra)) if lines]  # fmt: skip
    return "; ".join(parts)


def _numbers_close(abs_tol: float | None, rel_tol: float | None) -> Any:
    def equal(want: str, have: str) -> bool:
        if want == have:
            return True
        try:
            a, b = float(want), float(have)
        except ValueError:
            return False
        if a != a or b != b:  # NaN: equal only to NaN, written the same way (above)
            return False
        diff = abs(a - b)
        return (abs_tol is not None and diff <= abs_tol) or (rel_tol is not None and diff <= rel_tol * abs(a))

    return equal


def _first_char(expected: str, got: str) -> str:
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        if want != have:
            line = expected.count("\n", 0, index) + 1
            want, have = expected[index : index + 20], got[index : index + 20]
            return f"byte {index} (line {line}): expected {want!r}, got {have!r}"
    if len(got) < len(expected):
        return f"output ended after {len(got)} character(s); expected {len(expected)}"
    return f"output has {len(got) - len(expected)} extra character(s) after the expected {len(expected)}"
