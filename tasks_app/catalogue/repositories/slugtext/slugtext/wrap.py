"""Greedy line wrapping and truncation with an ellipsis."""

from __future__ import annotations


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters, words kept whole; a word longer than
    `width` is split across lines."""
    if width < 1:
        raise ValueError("width must be at least 1")
    lines: list[str] = []
    current = ""
    for word in text.split():
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        if not word:
            continue
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current = current + " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def truncate(text: str, width: int, *, ellipsis: str = "...") -> str:
    """`text` if it fits in `width`, else cut at a word boundary with `ellipsis` added,
    the whole no longer than `width`."""
    if len(text) <= width:
        return text
    room = width - len(ellipsis)
    if room <= 0:
        return ellipsis[:width]
    cut = text[:room]
    space = cut.rfind(" ")
    if space > 0:
        cut = cut[:space]
    return cut.rstrip() + ellipsis
