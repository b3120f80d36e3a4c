from textstats import longest_word, word_count


def test_counts_words_separated_by_single_spaces():
    assert word_count("a bb ccc") == 3


def test_longest_word_prefers_the_first_on_a_tie():
    assert longest_word("ab cd") == "ab"
