from spans import Interval, gaps, merge, subtract, total_length


def test_merge_joins_overlapping_and_touching_intervals():
    merged = merge([Interval(7, 8), Interval(1, 3), Interval(2, 5), Interval(5, 6)])
    assert merged == [Interval(1, 6), Interval(7, 8)]


def test_merge_keeps_a_contained_interval_inside_its_container():
    assert merge([Interval(1, 10), Interval(2, 3)]) == [Interval(1, 10)]


def test_merge_drops_empty_intervals():
    assert merge([Interval(4, 4), Interval(1, 2)]) == [Interval(1, 2)]


def test_total_length_counts_overlaps_once():
    assert total_length([Interval(0, 4), Interval(2, 6), Interval(10, 11)]) == 7
    assert total_length([]) == 0


def test_gaps_within_a_window():
    found = gaps([Interval(1, 3), Interval(5, 6)], within=Interval(0, 10))
    assert found == [Interval(0, 1), Interval(3, 5), Interval(6, 10)]


def test_gaps_ignore_intervals_outside_the_window():
    found = gaps([Interval(-5, -1), Interval(2, 4), Interval(20, 30)], within=Interval(0, 10))
    assert found == [Interval(0, 2), Interval(4, 10)]


def test_no_gaps_when_fully_covered():
    assert gaps([Interval(-1, 11)], within=Interval(0, 10)) == []


def test_subtract_cuts_holes_and_trims_ends():
    left = subtract([Interval(0, 10)], [Interval(2, 3), Interval(8, 12)])
    assert left == [Interval(0, 2), Interval(3, 8)]


def test_subtract_leaves_untouched_intervals_alone():
    assert subtract([Interval(0, 2), Interval(5, 6)], [Interval(2, 5)]) == [Interval(0, 2), Interval(5, 6)]
