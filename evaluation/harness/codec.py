"""Plain data across the solution boundary.

Only these types cross: None, bool, int, float, str, bytes, list, tuple,
dict, set, frozenset, complex, nested to a bounded depth. Everything is
rebuilt from tags on the other side, so an object with a rigged `__eq__`
(or any class of the solution's) can never reach the judge's comparison.
Any other object stays where it was made and crosses only as a handle
({"$handle": id}), which the judge can pass back but never compare by value.
"""

from __future__ import annotations

import math

from .protocol import deep_recursion

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 12_000
MAX_ITEMS = 2_000_000


class NotPlainData(TypeError):
    """A value that cannot cross the boundary."""


def encode(value: Any, *, handle_of: Any = None) -> Any:
    """Plain data as JSON-ready tags. `handle_of(value)` may name an object the
    other side already holds (a remote object passed back); else NotPlainData."""
    counter = [0]
    with deep_recursion():
        return _encode(value, 0, counter, handle_of)


def _encode(value: Any, depth: int, counter: list[int], handle_of: Any = None) -> Any:
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
        return [_encode(v, depth + 1, counter, handle_of) for v in value]
    if kind is tuple:
        return {"$tuple": [_encode(v, depth + 1, counter, handle_of) for v in value]}
    if kind is dict:
        return {
            "$dict": [
                [_encode(k, depth + 1, counter, handle_of), _encode(v, depth + 1, counter, handle_of)]
                for k, v in value.items()
            ]
        }
    if kind is set or kind is frozenset:
        tag = "$set" if kind is set else "$frozenset"
        return {tag: [_encode(v, depth + 1, counter, handle_of) for v in value]}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind is complex:
        return {"$complex": [repr(value.real), repr(value.imag)]}
    handle = handle_of(value) if handle_of is not None else None
    if handle is not None:
        return {"$handle": handle}
    raise NotPlainData(f"a value of type {kind.__module__}.{kind.__qualname__} is not plain data")


def decode(data: Any, *, resolve: Any = None) -> Any:
    """Rebuild plain data; `resolve(id)` turns a {"$handle": id} into the object it names.
    Anything that is not an encoded value raises ValueError."""
    with deep_recursion():
        return _decode(data, resolve)


def _decode(data: Any, resolve: Any) -> Any:
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [_decode(v, resolve) for v in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "$handle" and resolve is not None:
            return resolve(body)
        try:
            return _decode_tagged(tag, body, resolve)
        except (TypeError, IndexError, KeyError, AttributeError, OverflowError) as exc:
            # A body of the wrong shape ({"$complex": []}, an unhashable set member): the
            # peer sent something no encoder writes, which is a ValueError like any other.
            raise ValueError(f"not an encoded value: {str(data)[:80]} ({type(exc).__name__})") from None
    raise ValueError(f"not an encoded value: {str(data)[:80]}")


def _decode_tagged(tag: str, body: Any, resolve: Any) -> Any:
    if tag == "$float":
        return float(body)
    if tag == "$tuple":
        return tuple(_decode(v, resolve) for v in body)
    if tag == "$dict":
        return {_decode(k, resolve): _decode(v, resolve) for k, v in body}
    if tag == "$set":
        return {_decode(v, resolve) for v in body}
    if tag == "$frozenset":
        return frozenset(_decode(v, resolve) for v in body)
    if tag == "$bytes":
        return bytes.fromhex(body)
    if tag == "$complex":
        return complex(float(body[0]), float(body[1]))
    raise ValueError(f"not an encoded value: unknown tag {str(tag)[:40]}")
