from __future__ import annotations

from typing import Any

from tasks_app.roles import ROLES, has_role


def roles(request: Any) -> dict[str, Any]:
    """Expose the user's effective roles to templates, e.g. {% if roles.reviewer %}.

    Effective, as the services see them: an admin holds every role even
    without being in each group, so the UI offers what the services allow.
    """
    user = getattr(request, "user", None)
    return {"roles": {role: True for role in ROLES if has_role(user, role)}}
