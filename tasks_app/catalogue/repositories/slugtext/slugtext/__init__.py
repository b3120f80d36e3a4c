"""slugtext: tokens, slugs and wrapped lines."""

from slugtext.slug import slugify, unique_slug
from slugtext.tokens import Token, sentences, tokenize, words
from slugtext.wrap import truncate, wrap

__all__ = ["Token", "sentences", "slugify", "tokenize", "truncate", "unique_slug", "words", "wrap"]
