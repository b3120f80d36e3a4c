"""Token authentication with scopes, for programs.

Clients send `Authorization: Bearer <token>` (or `Token <token>`). The token's
scopes (read, write, review, export) bound what its user may do through it;
the user's roles still apply on top. Session-authenticated users (the UI)
have every scope, limited only by their roles.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework import authentication, exceptions

from tasks_app.models import ApiToken
from tasks_app.raw_rows import column_count, column_list, fetch_rows, instance_from_row, placeholders
from tasks_app.roles import ROLES
from tasks_app.services.tokens import SCOPES, hash_secret


@cache
def _lookup_statement() -> str:
    """The token, its user and the user's roles in one statement: one row per role
    held (one with no role when none is). Written out once a process: every API call
    authenticates, and the ORM spent ~1 ms of Python compiling the two queries this
    replaces (the token with its user, then the roles) on each."""
    user_model = get_user_model()
    memberships = user_model.groups.through._meta.db_table
    roles = placeholders(len(ROLES))
    return (f"SELECT {column_list(ApiToken, 't')}, {column_list(user_model, 'u')}, g.name "  # noqa: S608 - no user input in the SQL text
            f"FROM {ApiToken._meta.db_table} t JOIN {user_model._meta.db_table} u ON u.id = t.user_id "
            f"LEFT JOIN {memberships} m ON m.user_id = u.id "
            f"LEFT JOIN {Group._meta.db_table} g ON g.id = m.group_id AND g.name IN ({roles}) "
            "WHERE t.key_hash = %s")  # fmt: skip


def token_with_user(key_hash: str) -> ApiToken | None:
    """The token stored under `key_hash` with its user attached and the user's roles
    cached on it (as tasks_app.roles.user_roles would find them), or None."""
    rows = fetch_rows(_lookup_statement(), [*ROLES, key_hash])
    if not rows:
        return None
    user_model = get_user_model()
    split = column_count(ApiToken)
    token = instance_from_row(ApiToken, rows[0][:split])
    user = instance_from_row(user_model, rows[0][split : split + column_count(user_model)])
    held = frozenset(row[-1] for row in rows if row[-1] is not None)
    user._platform_roles = frozenset(ROLES) if user.is_superuser else held
    token.user = user
    return token


class ScopedTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower().decode(errors="replace") not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: expected 'Bearer <token>'.")
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("The token contains non-ASCII characters.") from exc
        token = token_with_user(hash_secret(secret))
        now = timezone.now()
        if token is None or token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed("The token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="api"'


def request_scopes(request: Any) -> frozenset[str]:
    if isinstance(request.auth, ApiToken):
        return frozenset(request.auth.scopes)
    if request.user and request.user.is_authenticated:
        return frozenset(SCOPES)
    return frozenset()
