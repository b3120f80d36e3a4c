"""Values across the solution boundary, as tagged plain data.

What crosses as a value, rebuilt from tags on the other side as a genuine object
of the very type named (never of a type the sender chose):

- None, bool, int, float, str, bytes, bytearray, complex, range, list, tuple,
  dict, set, frozenset, and a dict's keys, values and items views;
- from the standard library: types.SimpleNamespace, collections.Counter, OrderedDict, defaultdict
  (its default_factory by name, when it has one), deque (with its maxlen),
  named tuples (rebuilt as a namedtuple class of the same name and fields,
  made on the receiving side), decimal.Decimal, fractions.Fraction, and
  datetime's date, time, datetime (with a fixed-offset timezone) and timedelta;
- types and functions of the builtins and the standard library, by module and
  qualified name ({"$ref": [module, qualname]}): the receiver looks the name up
  among modules of the standard library only (names.py), never importing a
  file a candidate could have written, and where its policy refuses a name it
  uses the handle sent beside it, or refuses the value.

Exact types only: a value of a subclass (a candidate's `class Sneaky(int)`, a
Counter subclass with a rigged `__eq__`) is not plain data. The solution's side
sends such objects, and every other object, as handles (`handle_of`): they stay
in the solution's process, and the judge compares them without calling any of
their methods (remote.RemoteObject). So an object with a rigged `__eq__`,
`__hash__` or `__lt__` can never reach a comparison in the judge: the judge
compares only objects it built itself from data.
Nested to a bounded depth, with a bounded number of parts.
"""

from __future__ import annotations

import math
import sys

from . import names
from .protocol import deep_recursion

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 12_000
MAX_ITEMS = 2_000_000
# Named tuple classes made on the receiving side, per (name, fields): a peer that
# invents names cannot grow them without bound.
MAX_NAMEDTUPLE_CLASSES = 1000
MAX_NAMEDTUPLE_FIELDS = 255


_KEYS, _VALUES, _ITEMS = type({}.keys()), type({}.values()), type({}.items())


class NotPlainData(TypeError):
    """A value that cannot cross the boundary."""


def encode(value: Any, *, handle_of: Any = None) -> Any:
    """Plain data as JSON-ready tags. `handle_of(value)` may turn any other object
    into a tag the other side can resolve ({"$handle": id}, {"$remote": [...]});
    it returns None for an object it cannot name, which raises NotPlainData."""
    counter = [0]
    with deep_recursion():
        return _encode(value, 0, counter, handle_of)


def _items(pairs: Any, depth: int, counter: list[int], handle_of: Any) -> list[list[Any]]:
    return [[_encode(k, depth + 1, counter, handle_of), _encode(v, depth + 1, counter, handle_of)] for k, v in pairs]


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
        return {"$dict": _items(value.items(), depth, counter, handle_of)}
    if kind is set or kind is frozenset:
        tag = "$set" if kind is set else "$frozenset"
        return {tag: [_encode(v, depth + 1, counter, handle_of) for v in value]}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind is bytearray:
        return {"$bytearray": value.hex()}
    if kind is complex:
        return {"$complex": [repr(value.real), repr(value.imag)]}
    if kind is range:
        return {"$range": [value.start, value.stop, value.step]}
    if kind is _KEYS or kind is _VALUES or kind is _ITEMS:
        tag = "$keys" if kind is _KEYS else "$values" if kind is _VALUES else "$items"
        parts = value if kind is not _ITEMS else (list(pair) for pair in value)
        return {tag: [_encode(v, depth + 1, counter, handle_of) for v in parts]}
    encoded = _encode_standard(value, kind, depth, counter, handle_of)
    if encoded is not None:
        return encoded
    named = names.name_of(value)
    if named is not None:
        fallback = handle_of(value) if handle_of is not None else None
        return {"$ref": [*named, fallback] if fallback is not None else list(named)}
    handle = handle_of(value) if handle_of is not None else None
    if handle is not None:
        return handle
    raise NotPlainData(f"a value of type {kind.__module__}.{kind.__qualname__} is not plain data")


def _standard_type(module: str, name: str) -> Any:
    """A type of a standard-library module if that module is loaded here (a value of
    it can only exist if it is), without importing anything."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded is not None else None


def _encode_standard(value: Any, kind: type, depth: int, counter: list[int], handle_of: Any) -> Any:
    """The standard library's value types, by exact type; None for anything else."""
    module = getattr(kind, "__module__", None)
    if module == "collections":
        if kind is _standard_type("collections", "Counter"):
            return {"$counter": _items(dict.items(value), depth, counter, handle_of)}
        if kind is _standard_type("collections", "OrderedDict"):
            return {"$odict": _items(dict.items(value), depth, counter, handle_of)}
        if kind is _standard_type("collections", "defaultdict"):
            factory = value.default_factory
            if factory is not None and names.name_of(factory) is None:
                raise NotPlainData("a defaultdict whose default_factory has no standard-library name")
            return {"$defaultdict": [_encode(factory, depth + 1, counter), _items(dict.items(value), depth, counter,
                                                                                    handle_of)]}  # fmt: skip
        if kind is _standard_type("collections", "deque"):
            return {"$deque": [value.maxlen, [_encode(v, depth + 1, counter, handle_of) for v in value]]}
    if module == "types" and kind is _standard_type("types", "SimpleNamespace"):
        return {"$namespace": _items(vars(value).items(), depth, counter, handle_of)}
    if module == "decimal" and kind is _standard_type("decimal", "Decimal"):
        return {"$decimal": str(value)}
    if module == "fractions" and kind is _standard_type("fractions", "Fraction"):
        return {"$fraction": [value.numerator, value.denominator]}
    if module == "datetime":
        encoded = _encode_datetime(value, kind)
        if encoded is not None:
            return encoded
    if kind.__bases__ == (tuple,) and _is_namedtuple_class(kind):
        values = [_encode(v, depth + 1, counter, handle_of) for v in tuple.__iter__(value)]
        return {"$namedtuple": [kind.__name__, list(kind._fields), values]}
    return None


def _is_namedtuple_class(kind: type) -> bool:
    fields = kind.__dict__.get("_fields")
    return type(fields) is tuple and all(type(f) is str for f in fields) and len(fields) <= MAX_NAMEDTUPLE_FIELDS


def _encode_timezone(tz: Any) -> Any:
    if tz is None:
        return None
    timezone = _standard_type("datetime", "timezone")
    if type(tz) is not timezone:
        raise NotPlainData(f"a datetime with a {type(tz).__qualname__} timezone is not plain data")
    offset, name = tz.utcoffset(None), tz.tzname(None)
    return [offset.days, offset.seconds, offset.microseconds, None if name == timezone(offset).tzname(None) else name]


def _encode_datetime(value: Any, kind: type) -> Any:
    if kind is _standard_type("datetime", "datetime"):
        return {"$datetime": [value.year, value.month, value.day, value.hour, value.minute, value.second,
                              value.microsecond, value.fold, _encode_timezone(value.tzinfo)]}  # fmt: skip
    if kind is _standard_type("datetime", "date"):
        return {"$date": [value.year, value.month, value.day]}
    if kind is _standard_type("datetime", "time"):
        return {"$time": [value.hour, value.minute, value.second, value.microsecond, value.fold,
                          _encode_timezone(value.tzinfo)]}  # fmt: skip
    if kind is _standard_type("datetime", "timedelta"):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    return None


def decode(data: Any, *, resolve: Any = None, remote: Any = None, policy: Any = None) -> Any:
    """Rebuild plain data; `resolve(id)` turns a {"$handle": id} into the object it names,
    `remote(body)` a {"$remote": body} (the judge's handles to the solution's objects),
    and `policy(module, qualname)` says whether a {"$ref"} may be looked up here (any
    standard-library name when None). Anything that is not an encoded value raises
    ValueError."""
    with deep_recursion():
        return _decode(data, (resolve, remote, policy))


def _decode(data: Any, hooks: tuple[Any, Any, Any]) -> Any:
    kind = type(data)
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [_decode(v, hooks) for v in data]
    if kind is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "$handle" and hooks[0] is not None:
            return hooks[0](body)
        if tag == "$remote" and hooks[1] is not None:
            return hooks[1](body)
        try:
            return _decode_tagged(tag, body, hooks)
        except ValueError as exc:
            if str(exc).startswith("not an encoded value"):
                raise
            raise ValueError(f"not an encoded value: {str(data)[:80]} ({exc})") from None
        except (TypeError, IndexError, KeyError, AttributeError, OverflowError, ArithmeticError) as exc:
            # A body of the wrong shape ({"$complex": []}, an unhashable set member, a
            # Decimal of "x"): the peer sent something no encoder writes, which is a
            # ValueError like any other.
            raise ValueError(f"not an encoded value: {str(data)[:80]} ({type(exc).__name__})") from None
    raise ValueError(f"not an encoded value: {str(data)[:80]}")


def _pairs(body: Any, hooks: tuple[Any, Any, Any]) -> list[tuple[Any, Any]]:
    return [(_decode(k, hooks), _decode(v, hooks)) for k, v in body]


def _ints(body: Any, count: int) -> list[int]:
    if type(body) is not list or len(body) < count or any(type(v) is not int for v in body[:count]):
        raise ValueError(f"not an encoded value: expected {count} integers, got {str(body)[:80]}")
    return body


def _decode_tagged(tag: str, body: Any, hooks: tuple[Any, Any, Any]) -> Any:
    if tag == "$float":
        return float(body)
    if tag == "$tuple":
        return tuple(_decode(v, hooks) for v in body)
    if tag == "$dict":
        return dict(_pairs(body, hooks))
    if tag == "$set":
        return {_decode(v, hooks) for v in body}
    if tag == "$frozenset":
        return frozenset(_decode(v, hooks) for v in body)
    if tag == "$bytes":
        return bytes.fromhex(body)
    if tag == "$bytearray":
        return bytearray.fromhex(body)
    if tag == "$complex":
        return complex(float(body[0]), float(body[1]))
    if tag == "$range":
        return range(*_ints(body, 3)[:3])
    if tag == "$keys":
        return dict.fromkeys(_decode(v, hooks) for v in body).keys()
    if tag == "$values":
        return dict(enumerate(_decode(v, hooks) for v in body)).values()
    if tag == "$items":
        return dict((k, v) for k, v in (_decode(pair, hooks) for pair in body)).items()
    if tag == "$namespace":
        import types

        fields = _pairs(body, hooks)
        if any(type(k) is not str for k, _ in fields):
            raise ValueError("not an encoded value: a namespace's names must be strings")
        return types.SimpleNamespace(**dict(fields))
    if tag == "$ref":
        return _decode_ref(body, hooks)
    if tag in ("$counter", "$odict", "$defaultdict", "$deque", "$namedtuple"):
        return _decode_collection(tag, body, hooks)
    if tag == "$decimal":
        if type(body) is not str:
            raise ValueError(f"not an encoded value: a Decimal of {str(body)[:40]}")
        from decimal import Decimal

        return Decimal(body)
    if tag == "$fraction":
        from fractions import Fraction

        numerator, denominator = _ints(body, 2)[:2]
        return Fraction(numerator, denominator)
    if tag in ("$date", "$time", "$datetime", "$timedelta"):
        return _decode_datetime(tag, body)
    raise ValueError(f"not an encoded value: unknown tag {str(tag)[:40]}")


def _decode_ref(body: Any, hooks: tuple[Any, Any, Any]) -> Any:
    if type(body) is not list or len(body) not in (2, 3) or type(body[0]) is not str or type(body[1]) is not str:
        raise ValueError(f"not an encoded value: a name of {str(body)[:80]}")
    module, qualname = body[0], body[1]
    policy = hooks[2]
    found = names.resolve(module, qualname) if policy is None or policy(module, qualname) else None
    if found is not None:
        return found
    if len(body) == 3 and type(body[2]) is dict and len(body[2]) == 1 and next(iter(body[2])) in ("$handle", "$remote"):
        return _decode(body[2], hooks)
    raise ValueError(f"not an encoded value: {module[:60]}.{qualname[:60]} is not a name this side resolves")


def _decode_collection(tag: str, body: Any, hooks: tuple[Any, Any, Any]) -> Any:
    import collections

    if tag == "$counter":
        counter = collections.Counter()
        for key, count in _pairs(body, hooks):
            dict.__setitem__(counter, key, count)  # the counts as they were, zero and negative ones too
        return counter
    if tag == "$odict":
        return collections.OrderedDict(_pairs(body, hooks))
    if tag == "$defaultdict":
        factory = _decode(body[0], hooks)
        if factory is not None and not callable(factory):
            raise ValueError("not an encoded value: a defaultdict's factory must be callable")
        return collections.defaultdict(factory, _pairs(body[1], hooks))
    if tag == "$deque":
        maxlen = body[0]
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise ValueError(f"not an encoded value: a deque's maxlen of {str(maxlen)[:40]}")
        return collections.deque([_decode(v, hooks) for v in body[1]], maxlen)
    name, fields, values = body
    klass = namedtuple_class(name, fields)
    if type(values) is not list or len(values) != len(fields):
        raise ValueError("not an encoded value: a named tuple whose values do not match its fields")
    return klass._make(_decode(v, hooks) for v in values)


_NAMEDTUPLES: dict[tuple[str, tuple[str, ...]], type] = {}


def namedtuple_class(name: Any, fields: Any) -> type:
    """A namedtuple class made here for (name, fields), the same class for the same
    pair. collections.namedtuple checks that both are identifiers (ValueError)."""
    if type(name) is not str or type(fields) is not list or any(type(f) is not str for f in fields):
        raise ValueError("not an encoded value: a named tuple's name and fields must be strings")
    if len(fields) > MAX_NAMEDTUPLE_FIELDS or len(name) > 200 or any(len(f) > 200 for f in fields):
        raise ValueError("not an encoded value: a named tuple with too many or too long names")
    key = (name, tuple(fields))
    klass = _NAMEDTUPLES.get(key)
    if klass is None:
        import collections

        klass = collections.namedtuple(name, fields)  # ValueError for a name that is no identifier
        klass.__module__ = "harness.codec"  # not the peer's module: a look-alike made here
        if len(_NAMEDTUPLES) >= MAX_NAMEDTUPLE_CLASSES:
            _NAMEDTUPLES.clear()
        _NAMEDTUPLES[key] = klass
    return klass


def _decode_timezone(body: Any) -> Any:
    import datetime

    if body is None:
        return None
    days, seconds, micros = _ints(body, 3)[:3]
    if len(body) != 4 or (body[3] is not None and type(body[3]) is not str):
        raise ValueError("not an encoded value: a timezone")
    offset = datetime.timedelta(days, seconds, micros)
    return datetime.timezone(offset) if body[3] is None else datetime.timezone(offset, body[3])


def _decode_datetime(tag: str, body: Any) -> Any:
    import datetime

    if tag == "$date":
        return datetime.date(*_ints(body, 3)[:3])
    if tag == "$timedelta":
        return datetime.timedelta(*_ints(body, 3)[:3])
    if tag == "$time":
        if type(body) is not list or len(body) != 6:
            raise ValueError("not an encoded value: a time")
        hour, minute, second, micro, fold = _ints(body, 5)[:5]
        return datetime.time(hour, minute, second, micro, _decode_timezone(body[5]), fold=fold)
    if type(body) is not list or len(body) != 9:
        raise ValueError("not an encoded value: a datetime")
    year, month, day, hour, minute, second, micro, fold = _ints(body, 8)[:8]
    return datetime.datetime(year, month, day, hour, minute, second, micro, _decode_timezone(body[8]), fold=fold)
