"""Linear systems by Gaussian elimination with partial pivoting."""

from __future__ import annotations

from vecmat.matrix import Matrix, ShapeError
from vecmat.vector import TOLERANCE, Vector


class SingularMatrix(ValueError):
    """The system has no unique solution."""


def _pivot_row(rows: list[list[float]], col: int) -> int:
    """The row at or below `col` with the largest entry in column `col`."""
    best = col
    for row in range(col + 1, len(rows)):
        if abs(rows[row][col]) > abs(rows[best][col]):
            best = row
    return best


def solve(matrix: Matrix, rhs: Vector) -> Vector:
    """x with matrix @ x == rhs."""
    size, cols = matrix.shape
    if size != cols or len(rhs) != size:
        raise ShapeError(f"cannot solve a {matrix.shape} system with a right side of length {len(rhs)}")
    rows = [[*row, rhs[i]] for i, row in enumerate(matrix.rows)]
    for col in range(size):
        pivot = _pivot_row(rows, col)
        if abs(rows[pivot][col]) < TOLERANCE:
            raise SingularMatrix("the matrix is singular")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for row in range(col + 1, size):
            factor = rows[row][col] / rows[col][col]
            for k in range(col, size + 1):
                rows[row][k] -= factor * rows[col][k]
    solution = [0.0] * size
    for row in range(size - 1, -1, -1):
        known = sum(rows[row][k] * solution[k] for k in range(row + 1, size))
        solution[row] = (rows[row][size] - known) / rows[row][row]
    return Vector(solution)


def inverse(matrix: Matrix) -> Matrix:
    """The inverse, one column of the identity solved for at a time."""
    size = matrix.shape[0]
    identity = Matrix.identity(size)
    columns = [solve(matrix, identity.column(j)) for j in range(size)]
    return Matrix([[columns[j][i] for j in range(size)] for i in range(size)])
