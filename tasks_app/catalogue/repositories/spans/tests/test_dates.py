import datetime as dt

import pytest
from spans import Interval, business_days, days, split_by_month

D = dt.date


def test_days_walks_the_range_without_its_end():
    assert list(days(Interval(D(2024, 2, 27), D(2024, 3, 2)))) == [
        D(2024, 2, 27),
        D(2024, 2, 28),
        D(2024, 2, 29),
        D(2024, 3, 1),
    ]


def test_days_with_a_step():
    assert list(days(Interval(D(2024, 1, 1), D(2024, 1, 8)), step=3)) == [D(2024, 1, 1), D(2024, 1, 4), D(2024, 1, 7)]
    with pytest.raises(ValueError):
        list(days(Interval(D(2024, 1, 1), D(2024, 1, 2)), step=0))


def test_business_days_skip_weekends_and_holidays():
    week = Interval(D(2024, 7, 1), D(2024, 7, 8))  # Monday to the next Monday
    assert business_days(week) == 5
    assert business_days(week, holidays=[D(2024, 7, 4), D(2024, 7, 6)]) == 4


def test_split_by_month_cuts_at_each_first():
    pieces = split_by_month(Interval(D(2023, 11, 20), D(2024, 1, 10)))
    assert pieces == [
        Interval(D(2023, 11, 20), D(2023, 12, 1)),
        Interval(D(2023, 12, 1), D(2024, 1, 1)),
        Interval(D(2024, 1, 1), D(2024, 1, 10)),
    ]


def test_a_range_inside_one_month_is_one_piece():
    assert split_by_month(Interval(D(2024, 5, 2), D(2024, 5, 9))) == [Interval(D(2024, 5, 2), D(2024, 5, 9))]
