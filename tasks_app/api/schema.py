"""OpenAPI description of the token authentication (imported in AppConfig.ready)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ScopedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tasks_app.api.auth.ScopedTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (create one at /api/v1/tokens/). Scopes: read, write, review, export.",
        }
