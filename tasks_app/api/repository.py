"""REST API views of repository tasks: archive uploads, one file of a tree, the tree as a tar.

Thin like the rest of the API (views.py): read the upload or the path, call one
service or selector, return its result. The version itself, manifest included,
is read through the ordinary version endpoints.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app import selectors, services
from tasks_app.api import serializers as s
from tasks_app.api.parsers import RawUploadParser, uploaded_file
from tasks_app.api.permissions import HasScope
from tasks_app.api.views import HasAuthoringRole, errors
from tasks_app.errors import ValidationFailed

ARCHIVE_REQUEST = {
    "multipart/form-data": {
        "type": "object",
        "properties": {
            "file": {"type": "string", "format": "binary"},
            "changelog": {"type": "string"},
            "base_number": {"type": "integer"},
        },
    },
    "application/zip": OpenApiTypes.BINARY,
    "application/gzip": OpenApiTypes.BINARY,
    "application/x-tar": OpenApiTypes.BINARY,
}
ARCHIVE_HELP = (
    "A zip, tar or tar.gz laid out as task.json, repo/, hidden_tests/, patches/reference.diff and "
    "patches/adversarial/<label>.diff (docs/repository-tasks.md). Send it as multipart field `file` or as "
    "the raw body. Nothing is written unless the whole archive is valid."
)


def _option(request: Request, name: str) -> str:
    """A form field of a multipart upload, or a query parameter of a raw one."""
    if hasattr(request.data, "get") and isinstance(request.data.get(name), str):
        return request.data.get(name)
    return request.query_params.get(name, "")


def _base_number(request: Request) -> int | None:
    raw = _option(request, "base_number").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise ValidationFailed("base_number must be a version number.", details={"base_number": [f"Got {raw!r}."]})
    return int(raw)


def _created_body(result: Any) -> dict[str, Any]:
    version = selectors.task_version_get(task=result.task, number=result.version.number)
    return {"created": result.created, "version": s.VersionOut(version).data}


class ArchiveTaskCreateView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]
    parser_classes = [MultiPartParser, FormParser, RawUploadParser]

    @extend_schema(
        request=ARCHIVE_REQUEST,
        responses={201: s.VersionCreatedOut, **errors(400, 401, 403, 409)},
        description=f"Create a repository task from an archive. {ARCHIVE_HELP}",
    )
    def post(self, request: Request) -> Response:
        data, _ = uploaded_file(request, what="the archive")
        result = services.task_archive_import(actor=request.user, data=data, changelog=_option(request, "changelog"))
        return Response(_created_body(result), status=status.HTTP_201_CREATED)


class ArchiveVersionCreateView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]
    parser_classes = [MultiPartParser, FormParser, RawUploadParser]

    @extend_schema(
        request=ARCHIVE_REQUEST,
        responses={201: s.VersionCreatedOut, 200: s.VersionCreatedOut, **errors(400, 401, 403, 404, 409)},
        description=f"Save an archive as the task's next version (200 when nothing changed). {ARCHIVE_HELP}",
    )
    def post(self, request: Request, slug: str) -> Response:
        data, _ = uploaded_file(request, what="the archive")
        task = selectors.task_get(slug=slug)
        result = services.task_archive_import(
            actor=request.user,
            data=data,
            task=task,
            changelog=_option(request, "changelog"),
            base_number=_base_number(request),
        )
        return Response(_created_body(result), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class TreeFileView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **errors(400, 401, 403, 404)},
        description="One file of a repository version's tree, as its bytes.",
    )
    def get(self, request: Request, slug: str, number: int, path: str) -> HttpResponse:
        version = selectors.task_version_get(task=selectors.task_get(slug=slug), number=number)
        normal, data, executable = selectors.version_file(version=version, path=path)
        response = HttpResponse(data, content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{normal.rsplit("/", 1)[-1]}"'
        response["X-Executable"] = "1" if executable else "0"
        return response


class TreeArchiveView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(
        parameters=[OpenApiParameter("number", int, OpenApiParameter.PATH)],
        responses={(200, "application/gzip"): OpenApiTypes.BINARY, **errors(401, 403, 404)},
        description="A repository version's tree as a tar.gz, byte for byte the same on every call. "
        "Hidden test files are not in it.",
    )
    def get(self, request: Request, slug: str, number: int) -> HttpResponse:
        version = selectors.task_version_get(task=selectors.task_get(slug=slug), number=number)
        response = HttpResponse(selectors.version_tree_tar(version=version), content_type="application/gzip")
        response["Content-Disposition"] = f'attachment; filename="{slug}-v{number}-tree.tar.gz"'
        return response
