"""GET /api/v1/pools/{slug}/snapshots/{hash}/export?format=jsonl|json[&gzip=1]

Streamed a chunk of members at a time (constant memory), gzip when asked (the
query's `gzip=1` or the request's Accept-Encoding), with an ETag equal to the
snapshot hash: If-None-Match with it answers 304. Hidden tests only for tokens
with the `export:tests` scope. Curators, reviewers and trainers.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from tasks_app.api.auth import request_scopes
from tasks_app.api.permissions import HasScope
from tasks_app.errors import ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from trainer_bridge import export
from trainer_bridge.services.pools import snapshot_get

FORMATS = {"jsonl": ("application/x-ndjson", export.jsonl_chunks), "json": ("application/json", export.json_chunks)}


class CanExport(BasePermission):
    message = "Exports need the curator, reviewer, trainer or admin role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER, TRAINER)


class SnapshotExportView(APIView):
    permission_classes = [HasScope, CanExport]
    scope_by_method = {"GET": ("export",)}

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(FORMATS)), OpenApiParameter("gzip", bool)],
        responses={200: OpenApiTypes.BINARY, 304: None},
    )
    def get(self, request: Request, slug: str, digest: str) -> HttpResponse:
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in FORMATS:
            raise ValidationFailed(f"Unknown format {fmt!r}.", details={"format": [f"One of: {', '.join(FORMATS)}."]})
        snapshot = snapshot_get(pool_slug=slug, digest=digest)
        etag = f'"{snapshot.hash}"'
        wanted = [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]
        if etag in wanted or "*" in wanted:
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response
        content_type, chunks = FORMATS[fmt]
        body = chunks(snapshot, with_hidden_tests="export:tests" in request_scopes(request))
        gzip = request.query_params.get("gzip", "").lower() in ("1", "true", "yes") or "gzip" in request.headers.get(
            "Accept-Encoding", ""
        )
        response = StreamingHttpResponse(export.gzipped(body) if gzip else body, content_type=content_type)
        if gzip:
            response["Content-Encoding"] = "gzip"
        response["ETag"] = etag
        response["Vary"] = "Accept-Encoding, Authorization"
        response["Content-Disposition"] = f'attachment; filename="{slug}-{snapshot.hash[:12]}.{fmt}"'
        return response
