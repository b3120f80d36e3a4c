from __future__ import annotations

import math

import pytest

from evaluation.harness import codec


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -(10**40), 1.5, "text", b"\x00\xff", [1, [2, [3]]], (1, "a"), {"k": [1]}, {(1, 2): {3}},
     {1, 2}, frozenset({"a"}), 1 + 2j, [(), {}, set()]],
)  # fmt: skip
def test_plain_data_round_trips_exactly(value):
    decoded = codec.decode(codec.encode(value))
    assert decoded == value and type(decoded) is type(value)


def test_non_finite_floats_round_trip():
    assert math.isnan(codec.decode(codec.encode(float("nan"))))
    assert codec.decode(codec.encode([float("inf"), -float("inf")])) == [float("inf"), -float("inf")]


class AlwaysEqual:
    def __eq__(self, other):
        return True


class SneakyInt(int):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [AlwaysEqual(), SneakyInt(3), [1, SneakyInt(2)], {"k": AlwaysEqual()}, len])
def test_objects_that_could_rig_a_comparison_do_not_cross(value):
    with pytest.raises(codec.NotPlainData):
        codec.encode(value)


def test_a_value_nested_too_deep_is_refused():
    value: list = []
    for _ in range(codec.MAX_DEPTH + 5):
        value = [value]
    with pytest.raises(codec.NotPlainData, match="nested deeper"):
        codec.encode(value)
