"""Which scope an API call needs. Views declare `required_scopes` per method or
per action; the default is `read` for safe methods and `write` otherwise."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions

from tasks_app.api.auth import request_scopes


def required_scope(request: Any, view: Any) -> str:
    action = getattr(view, "action", None)
    by_action = getattr(view, "scope_by_action", {})
    if action in by_action:
        return by_action[action]
    return "read" if request.method in permissions.SAFE_METHODS else "write"


class HasScope(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        needed = required_scope(request, view)
        if needed not in request_scopes(request):
            self.message = f"This token lacks the '{needed}' scope needed for this call."
            return False
        return True
