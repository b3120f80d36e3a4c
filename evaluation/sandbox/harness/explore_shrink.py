"""Simpler variants of an input, for shrinking a counterexample (explore.py): the
exploration tries them in this order and keeps the first that is still valid for
the reference and still tells the mutant apart, until none is (a fixed point) or
its budget of calls is spent. Biggest cuts first, as hypothesis does: an argument
emptied, halved, then one part dropped, then each part made simpler, then numbers
moved toward 0 and text toward shorter.

Every variant is a new value; the one given is never changed.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# How many parts of one container get their own variants (a long list's tail is
# shortened by halving long before its elements one by one would matter).
_PARTS = 24


def variants(args: tuple, kwargs: dict) -> Iterator[tuple[tuple, dict]]:
    """(args, kwargs) with one argument made simpler, or one keyword argument left out."""
    for i, value in enumerate(args):
        for simpler in simpler_values(value):
            yield (*args[:i], simpler, *args[i + 1 :]), kwargs
    for name in sorted(kwargs):
        rest = {k: v for k, v in kwargs.items() if k != name}
        yield args, rest  # its default, if it has one
        for simpler in simpler_values(kwargs[name]):
            yield args, {**kwargs, name: simpler}


def simpler_values(value: Any, depth: int = 0) -> Iterator[Any]:
    kind = type(value)
    if kind is bool:
        if value:
            yield False
    elif kind is int:
        yield from _ints(value)
    elif kind is float:
        yield from _floats(value)
    elif kind is str or kind is bytes:
        yield from _texts(value)
    elif kind is list or kind is tuple:
        yield from _sequences(value, depth)
    elif kind is dict:
        yield from _dicts(value, depth)
    elif (kind is set or kind is frozenset) and value:
        yield kind()
        try:
            ordered = sorted(value)
        except TypeError:
            ordered = list(value)
        for item in ordered[:_PARTS]:
            yield kind(v for v in value if v != item)


def _ints(value: int) -> Iterator[int]:
    if value == 0:
        return
    yield 0
    if value < 0:
        yield -value
    half = -((-value) // 2) if value < 0 else value // 2  # toward 0
    if half not in (0, value):
        yield half
    yield value - 1 if value > 0 else value + 1


def _floats(value: float) -> Iterator[float]:
    if value != value or value in (float("inf"), float("-inf")):
        yield 0.0
        return
    if value == 0.0:
        return
    yield 0.0
    if value < 0:
        yield -value
    whole = float(int(value))
    if whole != value:
        yield whole
        if round(value, 1) != value:
            yield round(value, 1)
    if abs(value) > 1e-6:
        yield value / 2


def _texts(value: Any) -> Iterator[Any]:
    n = len(value)
    if not n:
        return
    yield value[:0]
    if n > 1:
        yield value[: n // 2]
        yield value[n // 2 :]
    for i in range(min(n, _PARTS)):
        yield value[:i] + value[i + 1 :]
    plain = "a" if isinstance(value, str) else b"a"
    for i in range(min(n, _PARTS)):
        if value[i : i + 1] != plain:
            yield value[:i] + plain + value[i + 1 :]


def _sequences(value: Any, depth: int) -> Iterator[Any]:
    kind, n = type(value), len(value)
    if kind is list and n:  # a tuple keeps its length: it is mostly a record of fixed shape
        yield []
        if n > 1:
            yield value[: n // 2]
            yield value[n // 2 :]
        for i in range(min(n, _PARTS)):
            yield value[:i] + value[i + 1 :]
    if depth < 8:
        for i in range(min(n, _PARTS)):
            for simpler in simpler_values(value[i], depth + 1):
                items = [*value[:i], simpler, *value[i + 1 :]]
                yield items if kind is list else tuple(items)


def _dicts(value: dict, depth: int) -> Iterator[dict]:
    if not value:
        return
    yield {}
    keys = list(value)[:_PARTS]
    for key in keys:
        yield {k: v for k, v in value.items() if k != key}
    if depth < 8:
        for key in keys:
            for simpler in simpler_values(value[key], depth + 1):
                yield {**value, key: simpler}
