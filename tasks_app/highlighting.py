"""Code shown on the curator's pages, highlighted in its language on the server.

Pygments turns a source into spans of token classes (`hl-k` a keyword, `hl-s` a
string, ...), which app.css colours; no script and nothing from a CDN. Its HTML
formatter escapes every character of the source, so a solution's text can never
become markup. A source past HIGHLIGHT_MAX_CHARS is shown plain: tokenising a
quarter-megabyte file is not worth a slow page.
"""

from __future__ import annotations

import functools

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

HIGHLIGHT_MAX_CHARS = 64 * 1024
# The platform's language names (tasks_app/languages.py) -> Pygments' lexers.
LEXERS = {
    "python": "python3",
    "c": "c",
    "cpp17": "cpp",
    "cpp20": "cpp",
    "java": "java",
    "javascript": "javascript",
    "typescript": "typescript",
    "go": "go",
    "rust": "rust",
    "ruby": "ruby",
    "php": "php",
    "lua": "lua",
    "csharp": "csharp",
    "diff": "diff",
}
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")


def highlight_code(source: str, language: str) -> SafeString:
    """`<pre><code>` of `source`, its tokens in spans where `language` is known."""
    lexer_name = LEXERS.get(language or "python")
    if not source or lexer_name is None or len(source) > HIGHLIGHT_MAX_CHARS:
        return format_html('<pre><code class="code">{}</code></pre>', source)
    lexer = _lexer(lexer_name)
    if lexer is None:  # a Pygments without that lexer: plain text, never an error page
        return format_html('<pre><code class="code">{}</code></pre>', source)
    spans = highlight(source, lexer, _FORMATTER)
    return mark_safe(f'<pre><code class="code highlighted" data-language="{language}">{spans}</code></pre>')  # noqa: S308 - Pygments escapes the source; `language` is one of LEXERS' keys


@functools.cache
def _lexer(name: str) -> Lexer | None:
    """One lexer per language for the process (building one reads its rules afresh)."""
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=False, startinline=False)
    except ClassNotFound:
        return None
