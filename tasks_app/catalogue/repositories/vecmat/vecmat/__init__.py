"""vecmat: small vectors and matrices in pure Python."""

from vecmat.matrix import Matrix, ShapeError
from vecmat.solve import SingularMatrix, inverse, solve
from vecmat.vector import Vector

__all__ = ["Matrix", "ShapeError", "SingularMatrix", "Vector", "inverse", "solve"]
