from textstats import longest_word, word_count


def test_counts_words_across_newlines_and_tabs():
    assert word_count("one\ttwo\nthree") == 3
    assert word_count("x\ty") == 2


def test_text_of_spaces_has_no_words():
    assert word_count("   ") == 0
    assert longest_word("   ") == ""


def test_longest_word_ignores_repeated_spaces():
    assert longest_word("a  bb") == "bb"
