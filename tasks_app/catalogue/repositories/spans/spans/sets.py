"""Lists of intervals: merged, their gaps, their total length, one list minus another."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spans.interval import Interval


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, with overlapping and touching intervals joined; empty ones dropped."""
    merged: list[Interval] = []
    for interval in sorted(i for i in intervals if not i.empty):
        if merged and merged[-1].touches(interval):
            merged[-1] = merged[-1].hull(interval)
        else:
            merged.append(interval)
    return merged


def total_length(intervals: Iterable[Interval], zero: Any = 0) -> Any:
    """How much the intervals cover, overlaps counted once."""
    total = zero
    for interval in merge(intervals):
        total = total + interval.length()
    return total


def gaps(intervals: Iterable[Interval], *, within: Interval) -> list[Interval]:
    """The parts of `within` that no interval covers."""
    found = []
    cursor = within.start
    for interval in merge(intervals):
        if interval.end <= within.start:
            continue
        if interval.start >= within.end:
            break
        if interval.start > cursor:
            found.append(Interval(cursor, interval.start))
        cursor = max(cursor, interval.end)
    if cursor < within.end:
        found.append(Interval(cursor, within.end))
    return found


def subtract(intervals: Iterable[Interval], removed: Iterable[Interval]) -> list[Interval]:
    """What is left of `intervals` once every point of `removed` is taken out."""
    cuts = merge(removed)
    result = []
    for interval in merge(intervals):
        pieces = [interval]
        for cut in cuts:
            next_pieces = []
            for piece in pieces:
                if not piece.overlaps(cut):
                    next_pieces.append(piece)
                    continue
                if piece.start < cut.start:
                    next_pieces.append(Interval(piece.start, cut.start))
                if cut.end < piece.end:
                    next_pieces.append(Interval(cut.end, piece.end))
            pieces = next_pieces
        result.extend(pieces)
    return result
