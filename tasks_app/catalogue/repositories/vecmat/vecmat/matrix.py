"""Matrices: immutable rows of floats."""

from __future__ import annotations

from collections.abc import Iterable

from vecmat.vector import TOLERANCE, Vector


class ShapeError(ValueError):
    """The shapes of the operands do not fit the operation."""


class Matrix:
    __slots__ = ("rows",)

    def __init__(self, rows: Iterable[Iterable[float]]) -> None:
        self.rows = tuple(tuple(float(v) for v in row) for row in rows)
        if not self.rows or not self.rows[0]:
            raise ShapeError("a matrix needs at least one row and one column")
        if any(len(row) != len(self.rows[0]) for row in self.rows):
            raise ShapeError("every row must have the same length")

    @classmethod
    def identity(cls, size: int) -> Matrix:
        return cls([[1.0 if i == j else 0.0 for j in range(size)] for i in range(size)])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Matrix) or other.shape != self.shape:
            return NotImplemented
        pairs = zip(self.rows, other.rows, strict=True)
        return all(abs(a - b) <= TOLERANCE for r, s in pairs for a, b in zip(r, s, strict=True))

    def __hash__(self) -> int:
        return hash(self.rows)

    def __repr__(self) -> str:
        return f"Matrix({[list(row) for row in self.rows]})"

    def column(self, index: int) -> Vector:
        return Vector(row[index] for row in self.rows)

    def transpose(self) -> Matrix:
        rows, cols = self.shape
        return Matrix([[self.rows[i][j] for i in range(rows)] for j in range(cols)])

    def __add__(self, other: Matrix) -> Matrix:
        if other.shape != self.shape:
            raise ShapeError(f"cannot add {self.shape} and {other.shape}")
        return Matrix([[a + b for a, b in zip(r, s, strict=True)] for r, s in zip(self.rows, other.rows, strict=True)])

    def scaled(self, factor: float) -> Matrix:
        return Matrix([[v * factor for v in row] for row in self.rows])

    def __matmul__(self, other: Matrix | Vector) -> Matrix | Vector:
        if isinstance(other, Vector):
            if len(other) != self.shape[1]:
                raise ShapeError(f"cannot multiply {self.shape} by a vector of length {len(other)}")
            return Vector(Vector(row).dot(other) for row in self.rows)
        if self.shape[1] != other.shape[0]:
            raise ShapeError(f"cannot multiply {self.shape} by {other.shape}")
        columns = [other.column(j) for j in range(other.shape[1])]
        return Matrix([[Vector(row).dot(col) for col in columns] for row in self.rows])

    def trace(self) -> float:
        self._require_square()
        return sum(self.rows[i][i] for i in range(self.shape[0]))

    def minor(self, row: int, col: int) -> Matrix:
        return Matrix([r[:col] + r[col + 1 :] for i, r in enumerate(self.rows) if i != row])

    def determinant(self) -> float:
        """By cofactor expansion along the first row: fine for the small sizes this is for."""
        self._require_square()
        size = self.shape[0]
        if size == 1:
            return self.rows[0][0]
        if size == 2:
            (a, b), (c, d) = self.rows
            return a * d - b * c
        total = 0.0
        for col in range(size):
            sign = -1.0 if col % 2 else 1.0
            total += sign * self.rows[0][col] * self.minor(0, col).determinant()
        return total

    def _require_square(self) -> None:
        if self.shape[0] != self.shape[1]:
            raise ShapeError(f"a square matrix is needed, not {self.shape}")
