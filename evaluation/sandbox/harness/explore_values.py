"""Values as an exploration (explore.py) handles them: fresh copies, keys to dedupe
by, the comparison that decides whether a mutant told itself apart, the literal
source an input or output is reported as, and a size that shrinking must lower.

Everything here runs in the judge on values it rebuilt itself from plain data
(codec.py): no method of the candidate's is called.
"""

from __future__ import annotations

from . import codec, lite

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

# Nesting past which comparison falls back to Python's own == (no float tolerance):
# recursion that deep is the data's business, not a reason to fail the run.
_DEEP = 200
# A float answer's tolerance, relative to max(1, |expected|): the generated tests' own
# (tests_text.py reads it from here), so the run proves exactly what a test will check.
REL_TOL = 1e-6
# Longest literal source kept in the record for one value.
MAX_TEXT = 20_000


class Opaque:
    """An answer that is not plain data: a handle to an object that stayed in the
    solution's process. Equal to nothing (itself included): it can only ever tell a
    mutant apart from a reference that answered plain data."""

    __slots__ = ("type_name",)

    def __init__(self, body: Any) -> None:
        self.type_name = str(body[1])[:100] if isinstance(body, list) and len(body) > 1 else "object"

    def __repr__(self) -> str:
        return f"<{self.type_name} in the solution's process>"


def copy(value: Any) -> Any:
    """A fresh copy of plain data (the judge keeps its own; no call may share it)."""
    return codec.decode(codec.encode(value))


def key_of(args: tuple, kwargs: dict) -> str:
    """The text an input is known by: the same input always gives the same key, and
    True, 1 and 1.0 give three (JSON keeps them apart)."""
    return lite.dumps(codec.encode([list(args), kwargs]))


def has_opaque(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is Opaque:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)) or kind.__name__ == "deque":
            stack.extend(item)
    return False


def same(expected: Any, got: Any) -> bool:
    """Whether a test made of this answer (verification/generated/tests_text.py) would
    accept `got`: the very relation it checks, so that a mutant told apart here is one
    the test fails. Python's == where the expected answer holds no float; with a
    float in it, a number (never a bool) within REL_TOL of max(1, |expected|), lists
    and tuples of the same type element by element, dicts key by key, and == for the
    rest. NaN matches NaN (no test is made of one); an Opaque answer matches nothing."""
    if has_opaque(got):
        return False
    try:
        return _close(got, expected, 0) if _has_float(expected, 0) else bool(got == expected)
    except (RecursionError, TypeError, ValueError, OverflowError):
        return False


def _has_float(value: Any, depth: int) -> bool:
    if isinstance(value, (float, complex)):
        return True
    if depth > _DEEP:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_has_float(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return any(_has_float(k, depth + 1) or _has_float(v, depth + 1) for k, v in value.items())
    return False


def _close(got: Any, want: Any, depth: int) -> bool:
    if depth > _DEEP:
        return bool(got == want)
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if want != want:
            return got != got
        return abs(got - want) <= REL_TOL * max(1.0, abs(want))
    if isinstance(want, (list, tuple)) and type(got) is type(want) and len(got) == len(want):
        return all(_close(g, w, depth + 1) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict) and set(got) == set(want):
        return all(_close(got[k], w, depth + 1) for k, w in want.items())
    return bool(got == want)


def literal(value: Any) -> str | None:
    """`repr(value)` if ast.literal_eval reads it back as the very same value (same
    types all the way down); else None: a NaN, a Counter, a Decimal, an int too long
    for repr, a handle are no literal."""
    try:
        text = repr(value)
    except Exception:
        return None
    if len(text) > MAX_TEXT:
        return None
    import ast

    try:
        back = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    try:
        return text if _identical(back, value, 0) else None
    except RecursionError:
        return None


def _identical(left: Any, right: Any, depth: int) -> bool:
    if type(left) is not type(right) or depth > _DEEP:
        return False
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(_identical(a, b, depth + 1) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_identical(v, right[k], depth + 1) for k, v in left.items())
    if isinstance(left, (set, frozenset)):
        return left == right and {type(v) for v in left} == {type(v) for v in right}
    return bool(left == right)


def text_of(value: Any) -> str:
    """Source for a value in the record: its literal where it has one, else its repr."""
    found = literal(value)
    if found is not None:
        return found
    try:
        return repr(value)[:MAX_TEXT]
    except Exception:
        return f"<{type(value).__name__} without a repr>"


def weight(value: Any) -> tuple[int, float, int, int]:
    """How big a value is, compared as a tuple: its parts and lengths, then the size of
    its numbers, then how many are negative, then its characters' code points. A
    shrink is accepted only if it lowers this, so shrinking always ends."""
    size = negatives = chars = 0
    magnitude = 0.0
    stack = [value]
    while stack:
        item = stack.pop()
        size += 1
        kind = type(item)
        if kind is bool:
            magnitude += int(item)
        elif kind is int:
            magnitude += float(min(abs(item), 10**300))
            negatives += item < 0
        elif kind is float:
            if item == item:
                magnitude += min(abs(item), 1e300)
            negatives += item < 0
        elif kind is str:
            size += len(item)
            chars += sum(map(ord, item))
        elif kind is bytes or kind is bytearray:
            size += len(item)
            chars += sum(item)
        elif isinstance(item, dict):
            size += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            size += len(item)
            stack.extend(item)
    return size, magnitude, negatives, chars
