"""One half-open interval [start, end): it holds start and not end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Interval:
    start: Any
    end: Any

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"an interval cannot end ({self.end}) before it starts ({self.start})")

    @property
    def empty(self) -> bool:
        return self.start == self.end

    def length(self) -> Any:
        return self.end - self.start

    def contains(self, point: Any) -> bool:
        return self.start <= point < self.end

    def overlaps(self, other: Interval) -> bool:
        """Whether they share at least one point (touching ends share none)."""
        return self.start < other.end and other.start < self.end

    def touches(self, other: Interval) -> bool:
        """Whether they overlap or meet end to start, so their union is one interval."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: Interval) -> Interval | None:
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def hull(self, other: Interval) -> Interval:
        """The smallest interval holding both."""
        return Interval(min(self.start, other.start), max(self.end, other.end))

    def shifted(self, offset: Any) -> Interval:
        return Interval(self.start + offset, self.end + offset)
