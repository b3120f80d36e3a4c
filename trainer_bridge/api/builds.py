"""Background export builds over REST.

POST /api/v1/pools/{slug}/snapshots/{hash}/builds {format, gzip[, with_hidden_tests]}
    -> 202 with the build (a new one queued, or the finished or running one with the
    same options);
GET /api/v1/export-builds/{id} -> the build, its progress, and once done its download URL;
GET /api/v1/export-builds/{id}/download -> the file (ETag: its SHA-256), 409 before.

Who may: as the streaming export (scope `export`; curators, reviewers, trainers; a
trainer only the snapshots of their jobs). Hidden tests only with `export:tests`,
for the build and for downloading a build that has them.
"""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, HttpResponse
from django.urls import path, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app.api.auth import request_scopes
from tasks_app.api.permissions import HasScope
from tasks_app.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from trainer_bridge import export
from trainer_bridge.api.views import CanExport, readable_snapshot
from trainer_bridge.models import ExportBuild
from trainer_bridge.services.builds import (
    build_file,
    build_get,
    build_needs_worker,
    build_progress,
    build_request,
)
from trainer_bridge.services.jobs import can_read_snapshot
from trainer_bridge.tasks import enqueue_build

TESTS_SCOPE = "export:tests"


def build_body(build: ExportBuild, request: Any = None) -> dict[str, Any]:
    """A build as the API shows it; URLs absolute when a request is given."""

    def url(name: str) -> str:
        relative = reverse(name, args=[build.pk])
        return request.build_absolute_uri(relative) if request is not None else relative

    return {
        "id": str(build.pk),
        "pool": build.snapshot.pool.slug,
        "snapshot": build.snapshot.hash,
        "format": build.format,
        "gzip": build.gzip,
        "with_hidden_tests": build.with_hidden_tests,
        "state": build.state,
        "rows_done": build.rows_done,
        "rows_total": build.rows_total,
        "progress": round(build_progress(build), 4),
        "size_bytes": build.size_bytes if build.state == "done" else None,
        "sha256": build.sha256 or None,
        "error": build.error or None,
        "created_at": build.created_at.isoformat(),
        "started_at": build.started_at.isoformat() if build.started_at else None,
        "finished_at": build.finished_at.isoformat() if build.finished_at else None,
        "url": url("api-export-build"),
        "download_url": url("api-export-build-download") if build.state == "done" else None,
    }


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValidationFailed(f"{name} must be true or false.", details={name: ["Expected true or false."]})
    return value


def _readable_build(request: Request, build_id: Any) -> ExportBuild:
    build = build_get(build_id=build_id)
    # A build the caller may not read answers as one that does not exist, as its snapshot would.
    if not can_read_snapshot(user=request.user, token=request.auth, snapshot=build.snapshot):
        raise NotFound(f"No export build {build_id!s} that this token can read.")
    return build


class SnapshotBuildsView(APIView):
    permission_classes = [HasScope, CanExport]
    scope_by_method = {"POST": ("export",)}
    throttle_scope = "export"

    @extend_schema(request=OpenApiTypes.OBJECT, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str, digest: str) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        fmt = body.get("format", "jsonl")
        if not isinstance(fmt, str) or fmt not in export.FORMATS:
            raise ValidationFailed(
                f"Unknown format {fmt!r}.", details={"format": [f"One of: {', '.join(export.FORMATS)}."]}
            )
        may_read_tests = TESTS_SCOPE in request_scopes(request)
        # Left out, hidden tests follow the scope, as in the streaming export.
        with_hidden_tests = _flag(body, "with_hidden_tests", may_read_tests)
        if with_hidden_tests and not may_read_tests:
            raise PermissionDenied(f"Hidden tests need a token with the '{TESTS_SCOPE}' scope.")
        snapshot = readable_snapshot(request, slug=slug, digest=digest)
        build, _created = build_request(snapshot=snapshot, format=fmt, gzip=_flag(body, "gzip", False),
                                        with_hidden_tests=with_hidden_tests, actor=request.user)  # fmt: skip
        if build_needs_worker(build):
            enqueue_build(build)
        data = build_body(build, request)
        return Response(data, status=202, headers={"Location": data["url"]})


class ExportBuildView(APIView):
    permission_classes = [HasScope, CanExport]
    scope_by_method = {"GET": ("export",)}

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, build_id: Any) -> Response:
        return Response(build_body(_readable_build(request, build_id), request))


class ExportBuildDownloadView(APIView):
    permission_classes = [HasScope, CanExport]
    scope_by_method = {"GET": ("export",)}
    throttle_scope = "export"

    @extend_schema(responses={200: OpenApiTypes.BINARY, 304: None, 409: OpenApiTypes.OBJECT})
    def get(self, request: Request, build_id: Any) -> HttpResponse:
        build = _readable_build(request, build_id)
        if build.with_hidden_tests and TESTS_SCOPE not in request_scopes(request):
            raise PermissionDenied(f"This build has hidden tests: downloading it needs the '{TESTS_SCOPE}' scope.")
        if build.state != "done":
            raise Conflict(
                f"Export build {build.pk} is {build.state}, not done: nothing to download yet.",
                details={"state": build.state, "progress": round(build_progress(build), 4)},
            )
        etag = f'"{build.sha256}"'
        wanted = [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]
        if etag in wanted or "*" in wanted:
            response = HttpResponse(status=304)
        else:
            path = build_file(build=build)
            fmt = export.FORMATS.get(build.format)
            name = f"{build.snapshot.pool.slug}-{build.snapshot.hash[:12]}.{fmt.name if fmt else build.format}"
            content_type = "application/gzip" if build.gzip else (fmt.content_type if fmt else None)
            response = FileResponse(path.open("rb"), as_attachment=True,
                                    filename=name + (".gz" if build.gzip else ""),
                                    content_type=content_type)  # fmt: skip
        response["ETag"] = etag
        response["Vary"] = "Authorization"
        return response


urlpatterns = [
    path(
        "pools/<slug:slug>/snapshots/<str:digest>/builds",
        SnapshotBuildsView.as_view(),
        name="api-snapshot-builds",
    ),
    path("export-builds/<str:build_id>", ExportBuildView.as_view(), name="api-export-build"),
    path("export-builds/<str:build_id>/download", ExportBuildDownloadView.as_view(), name="api-export-build-download"),
]
