"""Splitting text into tokens: words, numbers and punctuation, with where they start."""

from __future__ import annotations

from dataclasses import dataclass

SENTENCE_ENDS = ".!?"


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "number" or "punct"
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def _is_word_char(char: str) -> bool:
    return char.isalpha() or char == "'"


def _number_end(text: str, index: int) -> int:
    """Where a number starting at `index` ends: digits, with one decimal point between digits."""
    end = index
    seen_point = False
    while end < len(text):
        char = text[end]
        if char.isdigit():
            end += 1
        elif char == "." and not seen_point and end + 1 < len(text) and text[end + 1].isdigit():
            seen_point = True
            end += 1
        else:
            break
    return end


def tokenize(text: str) -> list[Token]:
    tokens = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif char.isdigit():
            end = _number_end(text, index)
            tokens.append(Token("number", text[index:end], index))
            index = end
        elif _is_word_char(char):
            end = index
            while end < len(text) and (_is_word_char(text[end]) or text[end].isdigit()):
                end += 1
            tokens.append(Token("word", text[index:end], index))
            index = end
        else:
            tokens.append(Token("punct", char, index))
            index += 1
    return tokens


def words(text: str) -> list[str]:
    """The words of `text`, lowercased, without numbers or punctuation."""
    return [token.text.lower() for token in tokenize(text) if token.kind == "word"]


def sentences(text: str) -> list[str]:
    """`text` cut after each run of sentence-ending punctuation, each piece stripped."""
    pieces = []
    start = 0
    index = 0
    while index < len(text):
        if text[index] in SENTENCE_ENDS:
            while index + 1 < len(text) and text[index + 1] in SENTENCE_ENDS:
                index += 1
            pieces.append(text[start : index + 1].strip())
            start = index + 1
        index += 1
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    return [piece for piece in pieces if piece]
