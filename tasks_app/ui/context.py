from __future__ import annotations

from typing import Any

from tasks_app.roles import user_roles


def roles(request: Any) -> dict[str, Any]:
    """Expose the user's roles to templates, e.g. {% if roles.reviewer %}."""
    held = user_roles(getattr(request, "user", None))
    return {"roles": {role: True for role in held}}
