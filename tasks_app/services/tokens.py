"""API tokens: created with scopes, stored hashed, revocable."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from tasks_app.errors import ValidationFailed
from tasks_app.models import ApiToken

# "export:tests": snapshot exports include hidden tests (offline trainers that compute rewards themselves).
# "reward": POST /api/v1/rewards (completions run in the sandboxes).
# "job": a training job's own token: reads its job and snapshot, posts its metrics and rollouts.
SCOPES = ("read", "write", "review", "export", "export:tests", "reward", "job", "session")
TOKEN_PREFIX = "tp_"  # noqa: S105 - a visible marker, not a secret


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once; only its hash is stored


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user: Any, name: str, scopes: list[str], expires_at: datetime | None = None) -> IssuedToken:
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValidationFailed(
            "Invalid scopes.", details={"scopes": [f"Choose one or more of: {', '.join(SCOPES)}; unknown: {unknown}."]}
        )
    if not name or len(name) > 100:
        raise ValidationFailed("Invalid token name.", details={"name": ["1-100 characters."]})
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[:10],
        key_hash=hash_secret(secret),
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
    )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
