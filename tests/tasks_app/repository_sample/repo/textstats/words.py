"""Splitting text into words, and what can be counted from them."""


def words(text: str) -> list[str]:
    """The words of `text`, split on any run of whitespace."""
    return text.split(" ")


def word_count(text: str) -> int:
    return len(words(text))


def longest_word(text: str) -> str:
    """The longest word; the first of equals on a tie; "" for a text without words."""
    found = words(text)
    return max(found, key=len) if found else ""
