"""URL slugs: ASCII, lowercase, words joined by a separator."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from slugtext.tokens import tokenize


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).encode("ascii", "ignore").decode()


def slugify(text: str, *, separator: str = "-", max_length: int | None = None) -> str:
    """The words and numbers of `text`, accents dropped, joined by `separator`; cut to
    `max_length` at a word boundary when one is given (a single long word is cut hard)."""
    parts = [token.text.lower().replace("'", "") for token in tokenize(_ascii(text)) if token.kind != "punct"]
    parts = [part for part in parts if part]
    slug = separator.join(parts)
    if max_length is None or len(slug) <= max_length:
        return slug
    cut = slug[: max_length + 1]
    boundary = cut.rfind(separator)
    if boundary > 0:
        return cut[:boundary]
    return slug[:max_length]


def unique_slug(text: str, taken: Iterable[str], *, separator: str = "-") -> str:
    """slugify(text), with -2, -3, ... added until it is not in `taken`."""
    base = slugify(text, separator=separator) or "item"
    used = set(taken)
    if base not in used:
        return base
    number = 2
    while f"{base}{separator}{number}" in used:
        number += 1
    return f"{base}{separator}{number}"
