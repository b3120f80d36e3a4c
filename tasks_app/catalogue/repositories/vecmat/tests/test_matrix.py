import pytest
from vecmat import Matrix, ShapeError, Vector


def test_rows_must_have_equal_length():
    with pytest.raises(ShapeError):
        Matrix([[1, 2], [3]])
    with pytest.raises(ShapeError):
        Matrix([])


def test_identity_and_shape():
    assert Matrix.identity(2) == Matrix([[1, 0], [0, 1]])
    assert Matrix([[1, 2, 3], [4, 5, 6]]).shape == (2, 3)


def test_transpose_swaps_rows_and_columns():
    assert Matrix([[1, 2, 3], [4, 5, 6]]).transpose() == Matrix([[1, 4], [2, 5], [3, 6]])


def test_addition_and_scaling():
    a = Matrix([[1, 2], [3, 4]])
    assert a + a == a.scaled(2) == Matrix([[2, 4], [6, 8]])
    with pytest.raises(ShapeError):
        a + Matrix([[1, 2]])


def test_matrix_product():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[0, 1], [1, 0]])
    assert a @ b == Matrix([[2, 1], [4, 3]])
    assert Matrix([[1, 2, 3]]) @ Matrix([[1], [2], [3]]) == Matrix([[14]])


def test_matrix_times_vector():
    assert Matrix([[1, 2], [3, 4], [5, 6]]) @ Vector([1, -1]) == Vector([-1, -1, -1])
    with pytest.raises(ShapeError):
        Matrix([[1, 2]]) @ Vector([1, 2, 3])


def test_product_shapes_must_fit():
    with pytest.raises(ShapeError, match="multiply"):
        Matrix([[1, 2]]) @ Matrix([[1, 2]])


def test_trace_sums_the_diagonal():
    assert Matrix([[1, 9, 9], [9, 2, 9], [9, 9, 3]]).trace() == 6
    with pytest.raises(ShapeError, match="square"):
        Matrix([[1, 2]]).trace()


def test_determinants_of_small_matrices():
    assert Matrix([[7]]).determinant() == 7
    assert Matrix([[1, 2], [3, 4]]).determinant() == -2
    assert Matrix([[2, 0, 1], [1, 3, 2], [1, 1, 2]]).determinant() == 6
    assert Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).determinant() == 0


def test_determinant_of_a_four_by_four():
    m = Matrix([[1, 0, 2, -1], [3, 0, 0, 5], [2, 1, 4, -3], [1, 0, 5, 0]])
    assert m.determinant() == 30
