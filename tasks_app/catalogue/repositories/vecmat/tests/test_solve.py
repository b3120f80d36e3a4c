import pytest
from vecmat import Matrix, ShapeError, SingularMatrix, Vector, inverse, solve


def test_solves_a_two_by_two_system():
    assert solve(Matrix([[2, 1], [1, 3]]), Vector([3, 5])) == Vector([0.8, 1.4])


def test_solves_a_system_that_needs_a_row_swap():
    a = Matrix([[0, 2, 1], [1, 1, 1], [2, 1, 0]])
    x = Vector([1, 2, 3])
    assert solve(a, a @ x) == x


def test_solves_a_four_by_four_system():
    a = Matrix([[4, -2, 1, 0], [-2, 4, -2, 1], [1, -2, 4, -2], [0, 1, -2, 4]])
    x = Vector([1, -1, 2, 0.5])
    assert solve(a, a @ x) == x


def test_a_singular_matrix_is_refused():
    with pytest.raises(SingularMatrix):
        solve(Matrix([[1, 2], [2, 4]]), Vector([1, 2]))


def test_shapes_must_fit():
    with pytest.raises(ShapeError):
        solve(Matrix([[1, 2]]), Vector([1]))
    with pytest.raises(ShapeError):
        solve(Matrix([[1, 0], [0, 1]]), Vector([1, 2, 3]))


def test_inverse_times_matrix_is_the_identity():
    a = Matrix([[2, 1, 0], [1, 3, 1], [0, 1, 4]])
    assert a @ inverse(a) == Matrix.identity(3)
    assert inverse(Matrix([[4, 7], [2, 6]])) == Matrix([[0.6, -0.7], [-0.2, 0.4]])
