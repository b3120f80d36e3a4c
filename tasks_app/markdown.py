"""Task statements are Markdown written by curators and imported from outside
datasets, so the HTML they render to is untrusted: it is sanitised with an
allow-list before any template marks it safe."""

from __future__ import annotations

import re

import markdown as md
import nh3

ALLOWED_TAGS = {
    "a",
    "abbr",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "code": {"class"},
    "td": {"style"},
    "th": {"style"},
}
# No javascript:, data: or vbscript: links; relative links stay allowed.
URL_SCHEMES = {"http", "https", "mailto"}
# The tables extension aligns cells with inline style; nothing else may be styled.
STYLE_PROPERTIES = {"text-align"}
_LANGUAGE_CLASS = re.compile(r"^language-[A-Za-z0-9_+-]{1,40}$")


def _attribute_filter(element: str, attribute: str, value: str) -> str | None:
    # fenced_code marks blocks with class="language-x"; any other class could
    # borrow the page's own styles, so only that form survives.
    if attribute == "class":
        return value if element == "code" and _LANGUAGE_CLASS.match(value) else None
    return value


def render_markdown(text: str) -> str:
    """Markdown (with fenced code and tables) to sanitised HTML."""
    if not text:
        return ""
    html = md.markdown(text, extensions=["fenced_code", "tables"], output_format="html")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes=URL_SCHEMES,
        filter_style_properties=STYLE_PROPERTIES,
        link_rel="noopener noreferrer nofollow",
    )
