"""Date ranges as half-open intervals of dates: walked a day at a time, split by month."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator

from spans.interval import Interval

ONE_DAY = dt.timedelta(days=1)
WEEKEND = (5, 6)  # Saturday and Sunday, as date.weekday() numbers them


def days(span: Interval, step: int = 1) -> Iterator[dt.date]:
    """Every `step`-th day of the range, from its start."""
    if step < 1:
        raise ValueError("step must be at least 1")
    day = span.start
    while day < span.end:
        yield day
        day += ONE_DAY * step


def business_days(span: Interval, holidays: Iterable[dt.date] = ()) -> int:
    """Days of the range that are neither weekend days nor holidays."""
    off = set(holidays)
    return sum(1 for day in days(span) if day.weekday() not in WEEKEND and day not in off)


def _next_month(day: dt.date) -> dt.date:
    if day.month == 12:
        return dt.date(day.year + 1, 1, 1)
    return dt.date(day.year, day.month + 1, 1)


def split_by_month(span: Interval) -> list[Interval]:
    """The range cut at the first of each month it crosses."""
    pieces = []
    start = span.start
    while start < span.end:
        end = min(_next_month(start), span.end)
        pieces.append(Interval(start, end))
        start = end
    return pieces
