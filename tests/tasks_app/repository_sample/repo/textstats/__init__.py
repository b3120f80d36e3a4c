"""Small text statistics."""

from textstats.words import longest_word, word_count, words

__all__ = ["longest_word", "word_count", "words"]
