"""Token authentication with scopes, for programs.

Clients send `Authorization: Bearer <token>` (or `Token <token>`). The token's
scopes (read, write, review, export) bound what its user may do through it;
the user's roles still apply on top. Session-authenticated users (the UI)
have every scope, limited only by their roles.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from tasks_app.models import ApiToken
from tasks_app.raw_rows import token_with_user
from tasks_app.services.tokens import SCOPES, hash_secret


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
