"""Template helpers of the pool pages."""

from __future__ import annotations

from django import template
from django.template import Context
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag(takes_context=True)
def include_next(context: Context) -> SafeString:
    """Render the template that the one being rendered overrides: the next of the same
    name in the loaders' order (as {% extends %} does for a template of the same name).

    An extension point such as tasks_app/_nav_extras.html is one file per name; an
    app that fills it calls this so the apps after it still add their part."""
    current = context.render_context.template
    origin = current.origin
    found, _ = current.engine.find_template(origin.template_name, skip=[origin])
    # Rendered as {% include %} would (render() sets it as the current template), so a
    # template further down can call this again; its output is already escaped.
    return found.render(context)
