"""Which scope an API call needs: `read` for safe methods, `write` otherwise,
unless a view says more precisely."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions

from tasks_app.api.auth import request_scopes


def required_scopes(request: Any, view: Any) -> tuple[str, ...]:
    """Scopes of which the call needs at least one. A view may widen a method
    with `scope_by_method` when the body decides (it then checks precisely)."""
    by_method = getattr(view, "scope_by_method", {})
    if request.method in by_method:
        return tuple(by_method[request.method])
    return ("read",) if request.method in permissions.SAFE_METHODS else ("write",)


class HasScope(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        needed = required_scopes(request, view)
        if not set(needed) & request_scopes(request):
            wanted = "' or '".join(needed)
            self.message = f"This token lacks the '{wanted}' scope needed for this call."
            return False
        return True
