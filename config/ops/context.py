"""The admin's banner: on every page of the UI, whether verification can run at all."""

from __future__ import annotations

from typing import Any

from tasks_app.roles import ADMIN, has_role


def sandbox_alert(request: Any) -> dict[str, Any]:
    """`sandbox_problem` for admins (the admin role, superusers, staff): a callable the
    template calls once, only when it renders the banner, so a fragment or a page for
    anyone else costs nothing. Its answer is the /healthz sandbox check's reason,
    cached (config/ops/health.py sandbox_alert): no page view starts a sandbox."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not (user.is_staff or has_role(user, ADMIN)):
        return {}
    from config.ops.health import sandbox_alert as problem

    return {"sandbox_problem": problem}
