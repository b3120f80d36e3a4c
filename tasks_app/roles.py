"""Roles are Django groups. A superuser holds every role."""

from __future__ import annotations

from typing import Any

CURATOR = "curator"
REVIEWER = "reviewer"
TRAINER = "trainer"
ADMIN = "admin"
ROLES = (CURATOR, REVIEWER, TRAINER, ADMIN)


def user_roles(user: Any) -> frozenset[str]:
    """The roles of `user`, cached on the instance for the request."""
    if user is None or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_platform_roles", None)
    if cached is None:
        if user.is_superuser:
            cached = frozenset(ROLES)
        else:
            cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._platform_roles = cached
    return cached


def has_role(user: Any, *roles: str) -> bool:
    held = user_roles(user)
    return ADMIN in held or any(role in held for role in roles)


def ensure_role_groups() -> None:
    from django.contrib.auth.models import Group

    for role in ROLES:
        Group.objects.get_or_create(name=role)
