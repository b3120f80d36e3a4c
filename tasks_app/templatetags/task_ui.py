"""Template helpers for the curator UI: state badges, Markdown, accessible form fields."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.forms import BoundField
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from tasks_app.highlighting import highlight_code
from tasks_app.markdown import render_markdown
from tasks_app.models import State
from tasks_app.ui.suite_text import signature_to_text

register = template.Library()

_STATE_LABELS = dict(State.choices)
# Detail keys that hold data for programs (the API), not messages for people.
_DATA_KEYS = {"allowed", "from_state", "to_state", "base_number", "latest_number"}


@register.filter
def state_badge(state: str) -> SafeString:
    """A coloured badge whose text, not only its colour, says the state."""
    label = _STATE_LABELS.get(state, state)
    return format_html('<span class="badge badge-{}">{}</span>', state, label)


@register.filter
def highlight(source: str, language: str = "python") -> SafeString:
    """`<pre><code>` of a source, highlighted in its language (tasks_app/highlighting.py)."""
    return highlight_code(source or "", language or "python")


@register.filter
def signature_text(signature: dict[str, Any]) -> str:
    """`(xs: list[int], k: int) -> int`: a function_calls task's signature as the form writes it."""
    return signature_to_text(signature or {})


@register.filter
def call_text(case: dict[str, Any]) -> str:
    """`(…args…) → expected` of one function test, the values in JSON."""
    args = ", ".join(json.dumps(arg, ensure_ascii=False) for arg in case.get("args") or ())
    return f"({args}) → {json.dumps(case.get('expected'), ensure_ascii=False)}"


@register.filter
def markdown(text: str) -> SafeString:
    # render_markdown sanitises with an allow-list, which is what makes this safe.
    return mark_safe(render_markdown(text or ""))  # noqa: S308


@register.filter
def short_hash(value: str | None) -> str:
    return (value or "")[:12]


@register.filter
def errors_id(field: BoundField) -> str:
    return f"{field.auto_id}-errors"


@register.simple_tag
def field_widget(field: BoundField, **attrs: Any) -> SafeString:
    """Render a widget that points screen readers at its help text and errors.

    Falsy attributes are dropped, so a template can pass ``autofocus=flag``.
    """
    attrs = {name: value for name, value in attrs.items() if value}
    described = [f"{field.auto_id}-help"] if field.help_text else []
    if field.errors:
        described.append(f"{field.auto_id}-errors")
        attrs["aria-invalid"] = "true"
    if described:
        attrs["aria-describedby"] = " ".join(described)
    return field.as_widget(attrs=attrs)


@register.filter
def error_lines(error: Any) -> list[str]:
    """ "field: message" lines from a domain error's details, where they are messages.

    Details also carry plain data (from_state, latest_number) that the
    message already puts in words; those are left out.
    """
    details = getattr(error, "details", None)
    if not isinstance(details, dict):
        return []
    lines = []
    for name, messages in details.items():
        if name in _DATA_KEYS:
            continue
        if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
            lines.extend(f"{name}: {m}" for m in messages)
    return lines


@register.filter
def field_messages(error: Any, name: str) -> list[str]:
    """The messages a domain error's details give for one field (e.g. the note of a rejection)."""
    details = getattr(error, "details", None)
    messages = details.get(name) if isinstance(details, dict) else None
    return [str(m) for m in messages] if isinstance(messages, list) else []


@register.filter
def hidden_tests_marked(version: Any) -> list[dict[str, Any]]:
    """Each hidden test with the record of how it was generated, or None for one a
    person wrote (version.generated_tests names them by index)."""
    generated = {g.get("hidden_index"): g for g in version.generated_tests or [] if isinstance(g, dict)}
    return [{"test": test, "generated": generated.get(i)} for i, test in enumerate(version.hidden_tests or [])]
