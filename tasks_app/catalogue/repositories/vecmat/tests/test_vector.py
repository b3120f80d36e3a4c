import math

import pytest
from vecmat import Vector


def test_addition_and_subtraction_are_elementwise():
    a, b = Vector([1, 2, 3]), Vector([4, 5, 6])
    assert a + b == Vector([5, 7, 9])
    assert b - a == Vector([3, 3, 3])


def test_vectors_of_different_lengths_do_not_add():
    with pytest.raises(ValueError, match="length"):
        Vector([1, 2]) + Vector([1, 2, 3])


def test_scaling_works_from_either_side_and_negation_flips_signs():
    v = Vector([1, -2])
    assert v * 3 == Vector([3, -6]) == 3 * v
    assert -v == Vector([-1, 2])


def test_dot_product_and_norm():
    assert Vector([1, 2, 3]).dot(Vector([4, -5, 6])) == 12
    assert Vector([3, 4]).norm() == 5


def test_normalized_has_unit_length_and_the_zero_vector_has_none():
    assert Vector([0, 3, 4]).normalized() == Vector([0, 0.6, 0.8])
    with pytest.raises(ValueError, match="zero vector"):
        Vector([0, 0]).normalized()


def test_cross_product_follows_the_right_hand_rule():
    x, y, z = Vector([1, 0, 0]), Vector([0, 1, 0]), Vector([0, 0, 1])
    assert x.cross(y) == z
    assert y.cross(z) == x
    assert z.cross(x) == y
    assert Vector([2, 3, 4]).cross(Vector([5, 6, 7])) == Vector([-3, 6, -3])


def test_cross_product_needs_three_components():
    with pytest.raises(ValueError, match="3-vectors"):
        Vector([1, 2]).cross(Vector([3, 4]))


def test_angle_between_vectors():
    assert math.isclose(Vector([1, 0]).angle(Vector([0, 2])), math.pi / 2)
    assert math.isclose(Vector([1, 1]).angle(Vector([-1, -1])), math.pi, abs_tol=1e-6)
    assert math.isclose(Vector([2, 2]).angle(Vector([1, 1])), 0, abs_tol=1e-6)


def test_equality_tolerates_rounding_and_repr_is_short():
    assert Vector([0.1 + 0.2]) == Vector([0.3])
    assert Vector([1, 2]) != Vector([1, 2.1])
    assert repr(Vector([1, 2.5])) == "Vector(1, 2.5)"
