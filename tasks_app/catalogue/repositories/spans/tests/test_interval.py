import pytest
from spans import Interval


def test_an_interval_holds_its_start_but_not_its_end():
    span = Interval(1, 4)
    assert span.contains(1) and span.contains(3.5)
    assert not span.contains(4) and not span.contains(0)


def test_length_and_emptiness():
    assert Interval(2, 7).length() == 5
    assert Interval(3, 3).empty and not Interval(3, 4).empty


def test_an_interval_cannot_end_before_it_starts():
    with pytest.raises(ValueError, match="before it starts"):
        Interval(5, 4)


def test_touching_intervals_do_not_overlap():
    assert Interval(1, 3).overlaps(Interval(2, 5))
    assert not Interval(1, 3).overlaps(Interval(3, 5))
    assert Interval(1, 3).touches(Interval(3, 5))
    assert not Interval(1, 3).touches(Interval(4, 5))


def test_intersection():
    assert Interval(1, 5).intersection(Interval(3, 8)) == Interval(3, 5)
    assert Interval(1, 5).intersection(Interval(2, 3)) == Interval(2, 3)
    assert Interval(1, 3).intersection(Interval(3, 4)) is None


def test_hull_and_shift():
    assert Interval(1, 2).hull(Interval(5, 6)) == Interval(1, 6)
    assert Interval(1, 2).shifted(10) == Interval(11, 12)
