from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import fractions
import math
import operator
import os
import subprocess
import sys
import textwrap
import types
import typing

import pytest

from evaluation.sandbox.harness import codec, names


def round_trip(value, **decode_hooks):
    return codec.decode(codec.encode(value), **decode_hooks)


Point = collections.namedtuple("Point", "x y")


class Pair(typing.NamedTuple):
    left: int
    right: str


UTC_PLUS_2 = datetime.timezone(datetime.timedelta(hours=2), "CEST")


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -(10**40), 1.5, "text", b"\x00\xff", [1, [2, [3]]], (1, "a"), {"k": [1]}, {(1, 2): {3}},
     {1, 2}, frozenset({"a"}), 1 + 2j, [(), {}, set()], bytearray(b"ab"), range(1, 10, 3),
     collections.Counter("abracadabra"), collections.Counter({"a": 0, "b": -2}),
     collections.OrderedDict([("b", 1), ("a", 2)]), collections.deque([1, 2, 3]), collections.deque([1], maxlen=4),
     collections.defaultdict(list, {"k": [1]}), collections.defaultdict(None, {1: 2}),
     decimal.Decimal("1.10"), decimal.Decimal("-0"), decimal.Decimal("NaN"), fractions.Fraction(-3, 9),
     datetime.date(2024, 2, 29), datetime.time(23, 59, 1, 5, tzinfo=UTC_PLUS_2),
     datetime.datetime(2021, 11, 7, 1, 30, fold=1), datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
     datetime.timedelta(days=-1, seconds=5, microseconds=7), [collections.Counter("ab"), {decimal.Decimal(1): 2}],
     {"b": 1, "a": 2}.keys(), {"b": 1, (1, 2): [3]}.items(), types.SimpleNamespace(a=1, b=[2])],
)  # fmt: skip
def test_plain_data_round_trips_exactly(value):
    decoded = round_trip(value)
    assert type(decoded) is type(value)
    if isinstance(value, decimal.Decimal) and value.is_nan():
        assert decoded.is_nan()
    else:
        assert decoded == value and repr(decoded) == repr(value)


def test_a_dicts_values_view_crosses_as_one_and_compares_as_one():
    values = {"a": 1, "b": [2]}.values()
    decoded = round_trip(values)
    assert type(decoded) is type(values) and list(decoded) == [1, [2]]
    assert (decoded == [1, [2]]) is (values == [1, [2]]) is False  # a values view equals only itself


def test_a_defaultdict_keeps_its_factory_and_a_deque_its_maxlen():
    counts = round_trip(collections.defaultdict(int, {"a": 1}))
    counts["b"] += 1
    assert counts == {"a": 1, "b": 1} and counts.default_factory is int
    window = round_trip(collections.deque([1, 2], maxlen=2))
    window.append(3)
    assert list(window) == [2, 3] and window.maxlen == 2


def test_named_tuples_are_rebuilt_as_named_tuples_of_the_same_name_and_fields():
    point = round_trip(Point(1, 2))
    assert point == (1, 2) and point.x == 1 and point._fields == ("x", "y") and type(point).__name__ == "Point"
    assert type(point) is not Point and type(point).__module__ == "harness.codec"  # made here, not the sender's
    assert type(round_trip(Point(3, 4))) is type(point)  # one class per (name, fields)
    pair = round_trip(Pair(1, "a"))
    assert pair == Pair(1, "a") and pair.right == "a"


@pytest.mark.parametrize(
    ("left", "right"),
    [(collections.Counter({"a": 1}), {"a": 1}), (collections.OrderedDict(a=1, b=2), {"b": 2, "a": 1}),
     (Point(1, 2), (1, 2)), (decimal.Decimal(3), 3), (fractions.Fraction(1, 2), 0.5),
     (collections.defaultdict(int, a=1), {"a": 1}), (datetime.timedelta(hours=1), datetime.timedelta(minutes=60)),
     (datetime.datetime(2020, 1, 1, 2, tzinfo=UTC_PLUS_2), datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)),
     (range(0, 3), range(0, 3, 1)), (bytearray(b"x"), b"x"), (1 + 0j, 1), ({"a": 1}.keys(), {"a"}),
     ({"a": 1}.items(), {("a", 1)}), (types.SimpleNamespace(x=1), types.SimpleNamespace(x=1))],
)  # fmt: skip
def test_values_rebuilt_compare_as_pythons_own_do(left, right):
    """What the judge compares is what Python's == says between the two values."""
    assert (round_trip(left) == right) is (left == right) is True
    assert (right == round_trip(left)) is True


def test_ordered_dicts_compare_in_order_between_themselves():
    first, second = collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1)
    assert (round_trip(first) == round_trip(second)) is (first == second) is False


@pytest.mark.parametrize("value", [int, str, type(None), collections.Counter, datetime.date, len, math.sqrt,
                                   operator.add, collections.abc.Mapping, decimal.Decimal])  # fmt: skip
def test_types_and_functions_of_the_standard_library_cross_by_name(value):
    assert round_trip(value) is value
    assert round_trip(value, policy=names.judge_policy) is value


class AlwaysEqual:
    def __eq__(self, other):
        return True


class SneakyInt(int):
    def __eq__(self, other):
        return True


class RiggedCounter(collections.Counter):
    def __eq__(self, other):
        return True


class RiggedPoint(Point):
    def __eq__(self, other):
        return True


@dataclasses.dataclass
class Always:
    x: int

    def __eq__(self, other):
        return True


@pytest.mark.parametrize(
    "value",
    [AlwaysEqual(), SneakyInt(3), [1, SneakyInt(2)], {"k": AlwaysEqual()}, RiggedCounter(a=1), RiggedPoint(1, 2),
     Always(1), [Always(2)], AlwaysEqual, lambda: 0, print.__self__],
)  # fmt: skip
def test_objects_that_could_rig_a_comparison_do_not_cross(value):
    """A subclass of a carried type (a Counter, a named tuple, an int) or any class of
    the candidate's is not a value: it crosses only as a handle, and its methods stay."""
    with pytest.raises(codec.NotPlainData):
        codec.encode(value)
    seen = []
    encoded = codec.encode(value, handle_of=lambda obj: seen.append(obj) or {"$handle": len(seen)})
    assert seen and "$handle" in str(encoded)  # it stays behind, as a handle


def test_a_function_renamed_after_a_standard_one_is_not_taken_for_it():
    def imposter(x):
        return 0

    imposter.__module__, imposter.__qualname__ = "math", "sqrt"
    assert names.name_of(imposter) is None
    with pytest.raises(codec.NotPlainData):
        codec.encode(imposter)


@pytest.mark.parametrize(
    ("module", "qualname"),
    [("os", "system"), ("posix", "system"), ("subprocess", "Popen"), ("builtins", "eval"), ("builtins", "exec"),
     ("builtins", "open"), ("builtins", "__import__"), ("ctypes", "CDLL"), ("this", "s"), ("evil_module", "x"),
     ("math", "_private"), ("collections", "_sys"), ("os", "path"), ("operator", "methodcaller"),
     ("builtins", "getattr"), ("builtins", "setattr"), ("builtins", "print")],
)  # fmt: skip
def test_the_judge_refuses_names_that_could_do_more_than_compute(module, qualname):
    """A name the solution sends is looked up in the judge only for modules that compute
    on values; anything else is refused, or stays the handle sent beside it."""
    with pytest.raises(ValueError, match="not a name this side resolves"):
        codec.decode({"$ref": [module, qualname]}, policy=names.judge_policy)
    handles = []
    decoded = codec.decode({"$ref": [module, qualname, {"$remote": [7, "x", 1]}]}, policy=names.judge_policy,
                           remote=lambda body: handles.append(body) or "a handle")  # fmt: skip
    assert decoded == "a handle" and handles == [[7, "x", 1]]


def test_names_resolve_only_to_what_the_standard_library_defines_under_them():
    assert names.resolve("os", "system") is None  # os.system is posix's, by its own name
    assert names.resolve("posix", "system") is os.system  # a real name (but not one the judge takes)
    assert names.resolve("collections", "Counter") is collections.Counter
    assert names.resolve("builtins", "NoneType") is type(None)
    assert names.resolve("math", "pi") is None  # not a type nor a function
    assert names.resolve("os", "path") is None  # a module is not a name
    assert names.resolve("evil_module", "x") is None


def test_a_module_a_candidate_wrote_is_never_imported_for_a_name(tmp_path):
    """A file named like a standard module, earlier on the path (the sandbox's scratch,
    a working directory), is never what a name resolves to or a test sees."""
    marker = tmp_path / "ran"
    for name in ("colorsys", "evil_module"):
        source = f"open({str(marker)!r}, 'w').write('x')\ndef hls_to_rgb(*a):\n    return 0\n"
        (tmp_path / f"{name}.py").write_text(source)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from evaluation.sandbox.harness import names
        assert "colorsys" not in sys.modules
        found = names.standard_module("colorsys")
        assert found is not None and found.__file__.startswith(names.STDLIB_DIR), found
        assert names.resolve("colorsys", "hls_to_rgb") is found.hls_to_rgb
        assert names.standard_module("evil_module") is None
        assert names.resolve("evil_module", "hls_to_rgb") is None
        assert sys.path[0] == {str(tmp_path)!r}  # the path is put back
        """)  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.getcwd())
    assert not marker.exists()


def test_modules_that_act_when_imported_are_never_imported(capfd):
    assert names.standard_module("this") is None and names.standard_module("antigravity") is None
    assert "Zen of Python" not in capfd.readouterr().out


def test_a_value_nested_too_deep_is_refused():
    value: list = []
    for _ in range(codec.MAX_DEPTH + 5):
        value = [value]
    with pytest.raises(codec.NotPlainData, match="nested deeper"):
        codec.encode(value)
    nested = collections.deque()
    for _ in range(codec.MAX_DEPTH + 5):
        nested = collections.deque([collections.Counter({"k": 1}), nested])
    with pytest.raises(codec.NotPlainData, match="nested deeper"):
        codec.encode(nested)


@pytest.mark.parametrize(
    "data",
    [{"$counter": [[1]]}, {"$counter": [[[1], 2]]}, {"$odict": 5}, {"$defaultdict": [{"$tuple": []}, []]},
     {"$defaultdict": [1, []]}, {"$deque": [-1, []]}, {"$deque": ["x", []]}, {"$namedtuple": ["1bad", ["x"], [1]]},
     {"$namedtuple": ["P", ["x", "x"], [1, 2]]}, {"$namedtuple": ["P", ["x"], [1, 2]]},
     {"$namedtuple": ["P", ["class"], [1]]}, {"$namedtuple": ["P", [f"f{i}" for i in range(300)], list(range(300))]},
     {"$decimal": "twelve"}, {"$decimal": 12}, {"$fraction": [1, 0]}, {"$fraction": [1.5, 2]},
     {"$fraction": [True, 2]}, {"$date": [2023, 2, 29]}, {"$date": [1, 2]}, {"$time": [25, 0, 0, 0, 0, None]},
     {"$datetime": [2020, 1, 1, 0, 0, 0, 0, 0, [1, 0, 0, None]]}, {"$timedelta": [10**10, 0, 0]},
     {"$range": [0, 10, 0]}, {"$range": [0, 1]}, {"$bytearray": "zz"}, {"$ref": ["math"]}, {"$ref": [1, 2]},
     {"$ref": ["os", "system", {"$tuple": []}]}, {"$remote": [1, "x", 0]}, {"$handle": 1}, {"$nope": 1},
     {"$keys": [[1]]}, {"$items": [[1, 2, 3]]}, {"$items": [[[1], 2]]}, {"$namespace": [[1, 2]]}],
)  # fmt: skip
def test_a_malformed_value_from_a_hostile_peer_is_a_value_error(data):
    with pytest.raises(ValueError, match="not an encoded value"):
        codec.decode(data, policy=names.judge_policy)


def test_named_tuple_classes_made_for_a_peer_are_bounded():
    codec._NAMEDTUPLES.clear()
    for i in range(codec.MAX_NAMEDTUPLE_CLASSES + 10):
        codec.decode({"$namedtuple": [f"T{i}", ["a"], [i]]})
    assert len(codec._NAMEDTUPLES) <= codec.MAX_NAMEDTUPLE_CLASSES
