"""GET /api/v1/pools/{slug}/snapshots/{hash}/export?format=jsonl|json|parquet[&gzip=1]

Streamed a chunk of members at a time (constant memory), gzip when asked (the
query's `gzip=1` or the request's Accept-Encoding; Parquet is compressed inside
and never gzipped), with an ETag equal to the snapshot hash: If-None-Match with
it answers 304. Hidden tests only for tokens with the `export:tests` scope.
Curators, reviewers and trainers.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app.api.auth import request_scopes
from tasks_app.api.pagination import PagePagination
from tasks_app.api.permissions import HasScope
from tasks_app.errors import ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from trainer_bridge import export
from trainer_bridge.services import solutions
from trainer_bridge.services.pools import snapshot_get

# The list endpoints answer a JSON array of objects, and the schema says so.
OBJECT_LIST = build_array_type(build_basic_type(OpenApiTypes.OBJECT))

FORMATS = export.FORMATS


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
        asked_gzip = request.query_params.get("gzip", "").lower() in ("1", "true", "yes")
        if asked_gzip and FORMATS[fmt].self_compressed:
            raise ValidationFailed(
                f"format={fmt} is compressed inside the file (zstd); ask for it without gzip.",
                details={"gzip": [f"Not with format={fmt}."]},
            )
        snapshot = readable_snapshot(request, slug=slug, digest=digest)
        etag = f'"{snapshot.hash}"'
        wanted = [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]
        if etag in wanted or "*" in wanted:
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response
        body = FORMATS[fmt].chunks(snapshot, with_hidden_tests="export:tests" in request_scopes(request))
        # Accept-Encoding is only an offer (most clients send it): a Parquet file goes as it is.
        gzip = not FORMATS[fmt].self_compressed and (asked_gzip or "gzip" in request.headers.get("Accept-Encoding", ""))
        response = StreamingHttpResponse(export.gzipped(body) if gzip else body, content_type=FORMATS[fmt].content_type)
        if gzip:
            response["Content-Encoding"] = "gzip"
        response["ETag"] = etag
        response["Vary"] = "Accept-Encoding, Authorization"
        response["Content-Disposition"] = f'attachment; filename="{slug}-{snapshot.hash[:12]}.{fmt}"'
        return response


class SolutionsPagination(PagePagination):
    page_size = 50  # members a page; each carries its solutions and mutants


class SnapshotSolutionsView(APIView):
    """GET /api/v1/pools/{slug}/snapshots/{hash}/solutions: every member's known
    solutions and mutants with their latest verification outcomes, a page of members
    at a time (what a replay policy answers with). They give the answers away as
    the hidden tests do, so the token needs `export:tests`."""

    permission_classes = [HasScope, CanExport]
    scope_by_method = {"GET": ("export:tests",)}

    @extend_schema(
        parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, slug: str, digest: str) -> Response:
        snapshot = readable_snapshot(request, slug=slug, digest=digest)
        paginator = SolutionsPagination()
        page = paginator.paginate_queryset(solutions.members_of(snapshot), request, view=self)
        return paginator.get_paginated_response(solutions.member_solutions(list(page)))


def readable_snapshot(request: Request, *, slug: str, digest: str) -> Any:
    """The snapshot, if this caller may read it (trainers: only through their jobs);
    otherwise the same 404 as a snapshot that does not exist."""
    from tasks_app.errors import NotFound
    from trainer_bridge.services.jobs import can_read_snapshot

    snapshot = snapshot_get(pool_slug=slug, digest=digest)
    if not can_read_snapshot(user=request.user, token=request.auth, snapshot=snapshot):
        raise NotFound(f"No snapshot {digest[:12]!r} of pool {slug!r} that this token can read.")
    return snapshot


def _pool(slug: str) -> Any:
    from tasks_app.errors import NotFound
    from trainer_bridge.models import Pool

    pool = Pool.objects.filter(slug=slug).first()
    if pool is None:
        raise NotFound(f"No pool {slug!r}.")
    return pool


def _snapshot_body(snapshot: Any) -> dict[str, Any]:
    return {"hash": snapshot.hash, "pool": snapshot.pool.slug, "size": snapshot.size, "criteria": snapshot.criteria,
            "created_at": snapshot.created_at.isoformat()}  # fmt: skip


class CanCurate(BasePermission):
    message = "Pools are made and frozen by curators, reviewers and admins; trainers read them."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return has_role(request.user, CURATOR, REVIEWER, TRAINER)
        return has_role(request.user, CURATOR, REVIEWER) and "write" in request_scopes(request)


# A job's token (scope `job`) lists its own pool and snapshot, and nothing else.
READ_OR_JOB = {"GET": ("read", "job")}


def _job_snapshot(request: Request) -> Any:
    from trainer_bridge.services.jobs import job_of_token

    job = job_of_token(request.auth)
    return job.snapshot if job is not None else None


class PoolListView(APIView):
    """GET the pools; POST {slug, title, criteria} to make one."""

    permission_classes = [HasScope, CanCurate]
    scope_by_method = READ_OR_JOB

    @extend_schema(responses={200: OBJECT_LIST})
    def get(self, request: Request) -> Response:
        from trainer_bridge.models import Pool

        pools = Pool.objects.order_by("slug")
        bound = _job_snapshot(request)
        if bound is not None:
            pools = pools.filter(pk=bound.pool_id)
        return Response([{"slug": p.slug, "title": p.title, "criteria": p.criteria,
                          "snapshots": p.snapshots.count()} for p in pools])  # fmt: skip

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        from trainer_bridge.services.pools import pool_create

        body = request.data if isinstance(request.data, dict) else {}
        slug = body.get("slug")
        if not isinstance(slug, str) or not slug:
            raise ValidationFailed("A pool needs a slug.", details={"slug": ["Required."]})
        pool = pool_create(slug=slug, title=str(body.get("title") or slug), criteria=body.get("criteria") or {},
                           actor=request.user)  # fmt: skip
        return Response({"slug": pool.slug, "title": pool.title, "criteria": pool.criteria}, status=201)


class PoolPreviewView(APIView):
    """GET how many tasks the pool's criteria match and a freeze would take, by band and tag."""

    permission_classes = [HasScope, CanCurate]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, slug: str) -> Response:
        from trainer_bridge.criteria import PoolCriteria
        from trainer_bridge.services.pools import pool_preview

        return Response(pool_preview(criteria=PoolCriteria.parse(_pool(slug).criteria)))


class SnapshotListView(APIView):
    """GET a pool's snapshots; POST to freeze it now (201, or 200 with the existing
    snapshot when nothing changed)."""

    permission_classes = [HasScope, CanCurate]
    scope_by_method = READ_OR_JOB

    @extend_schema(responses={200: OBJECT_LIST})
    def get(self, request: Request, slug: str) -> Response:
        snapshots = _pool(slug).snapshots.select_related("pool")
        bound = _job_snapshot(request)
        if bound is not None:
            snapshots = snapshots.filter(pk=bound.pk)
        return Response([_snapshot_body(s) for s in snapshots])

    @extend_schema(request=None, responses={201: OpenApiTypes.OBJECT, 200: OpenApiTypes.OBJECT})
    def post(self, request: Request, slug: str) -> Response:
        from trainer_bridge.services.pools import snapshot_create

        snapshot, created = snapshot_create(pool=_pool(slug), actor=request.user)
        return Response(_snapshot_body(snapshot), status=201 if created else 200)


class SnapshotDiffView(APIView):
    """GET ?from=HASH&to=HASH: tasks added, removed and changed between two snapshots."""

    permission_classes = [HasScope, CanCurate]

    @extend_schema(parameters=[OpenApiParameter("from", str), OpenApiParameter("to", str)],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request: Request, slug: str) -> Response:
        from trainer_bridge.services.pools import snapshot_diff

        missing = [name for name in ("from", "to") if not request.query_params.get(name)]
        if missing:
            raise ValidationFailed("Name both snapshots.", details={name: ["Required."] for name in missing})
        old = snapshot_get(pool_slug=slug, digest=request.query_params["from"])
        new = snapshot_get(pool_slug=slug, digest=request.query_params["to"])
        return Response(snapshot_diff(old=old, new=new))
