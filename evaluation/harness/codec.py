"""Plain data across the solution boundary.

Only these types cross: None, bool, int, float, str, bytes, list, tuple,
dict, set, frozenset, complex, nested to a bounded depth. Everything is
rebuilt from tags on the other side, so an object with a rigged `__eq__`
(or any class of the solution's) can never reach the judge's comparison.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 100
MAX_ITEMS = 2_000_000


class NotPlainData(TypeError):
    """A value that cannot cross the boundary."""


def encode(value: Any) -> Any:
    counter = [0]
    return _encode(value, 0, counter)


def _encode(value: Any, depth: int, counter: list[int]) -> Any:
    counter[0] += 1
    if counter[0] > MAX_ITEMS:
        raise NotPlainData(f"value has more than {MAX_ITEMS} parts")
    if depth > MAX_DEPTH:
        raise NotPlainData(f"value is nested deeper than {MAX_DEPTH}")
    kind = type(value)  # exact types only: a subclass could carry rigged methods
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value
    if kind is float:
        # JSON has no NaN or infinities; a finite float round-trips exactly through repr.
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is list:
        return [_encode(v, depth + 1, counter) for v in value]
    if kind is tuple:
        return {"$tuple": [_encode(v, depth + 1, counter) for v in value]}
    if kind is dict:
        return {"$dict": [[_encode(k, depth + 1, counter), _encode(v, depth + 1, counter)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        tag = "$set" if kind is set else "$frozenset"
        return {tag: [_encode(v, depth + 1, counter) for v in value]}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind is complex:
        return {"$complex": [repr(value.real), repr(value.imag)]}
    raise NotPlainData(f"a value of type {kind.__module__}.{kind.__qualname__} is not plain data")


def decode(data: Any) -> Any:
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [decode(v) for v in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "$float":
            return float(body)
        if tag == "$tuple":
            return tuple(decode(v) for v in body)
        if tag == "$dict":
            return {decode(k): decode(v) for k, v in body}
        if tag == "$set":
            return {decode(v) for v in body}
        if tag == "$frozenset":
            return frozenset(decode(v) for v in body)
        if tag == "$bytes":
            return bytes.fromhex(body)
        if tag == "$complex":
            return complex(float(body[0]), float(body[1]))
    raise ValueError(f"not an encoded value: {str(data)[:80]}")
