import pytest
from slugtext import truncate, wrap


def test_wrap_fills_lines_greedily():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_a_line_may_be_exactly_the_width():
    assert wrap("abc def", 7) == ["abc def"]


def test_long_words_are_split():
    assert wrap("a abcdefgh b", 3) == ["a", "abc", "def", "gh", "b"]
    assert wrap("abcdefgh xy", 4) == ["abcd", "efgh", "xy"]


def test_wrap_of_blank_text_is_no_lines():
    assert wrap("  \n ", 5) == []


def test_width_must_be_positive():
    with pytest.raises(ValueError):
        wrap("x", 0)


def test_truncate_leaves_fitting_text_alone():
    assert truncate("short", 5) == "short"


def test_truncate_cuts_at_a_word_and_adds_the_ellipsis():
    assert truncate("the quick brown fox", 15) == "the quick..."
    assert len(truncate("the quick brown fox", 15)) <= 15


def test_truncate_with_a_tiny_width():
    assert truncate("abcdef", 2) == ".."
    assert truncate("abcdef", 5, ellipsis="~") == "abcd~"
