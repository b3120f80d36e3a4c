"""Vectors: immutable sequences of floats."""

from __future__ import annotations

import math
from collections.abc import Iterable

TOLERANCE = 1e-9


class Vector:
    __slots__ = ("values",)

    def __init__(self, values: Iterable[float]) -> None:
        self.values = tuple(float(v) for v in values)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> float:
        return self.values[index]

    def __iter__(self):
        return iter(self.values)

    def __repr__(self) -> str:
        return "Vector(" + ", ".join(f"{v:g}" for v in self.values) + ")"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vector) or len(other) != len(self):
            return NotImplemented
        return all(abs(a - b) <= TOLERANCE for a, b in zip(self.values, other.values, strict=True))

    def __hash__(self) -> int:
        return hash(self.values)

    def _check(self, other: Vector) -> None:
        if len(other) != len(self):
            raise ValueError(f"vectors of length {len(self)} and {len(other)}")

    def __add__(self, other: Vector) -> Vector:
        self._check(other)
        return Vector(a + b for a, b in zip(self.values, other.values, strict=True))

    def __sub__(self, other: Vector) -> Vector:
        self._check(other)
        return Vector(a - b for a, b in zip(self.values, other.values, strict=True))

    def __mul__(self, factor: float) -> Vector:
        return Vector(v * factor for v in self.values)

    __rmul__ = __mul__

    def __neg__(self) -> Vector:
        return self * -1

    def dot(self, other: Vector) -> float:
        self._check(other)
        return sum(a * b for a, b in zip(self.values, other.values, strict=True))

    def norm(self) -> float:
        return math.sqrt(self.dot(self))

    def normalized(self) -> Vector:
        length = self.norm()
        if length < TOLERANCE:
            raise ValueError("the zero vector has no direction")
        return self * (1 / length)

    def cross(self, other: Vector) -> Vector:
        if len(self) != 3 or len(other) != 3:
            raise ValueError("the cross product is defined for 3-vectors only")
        a, b = self.values, other.values
        return Vector((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]))

    def angle(self, other: Vector) -> float:
        """The angle between the two vectors, in radians."""
        cosine = self.dot(other) / (self.norm() * other.norm())
        return math.acos(max(-1.0, min(1.0, cosine)))
