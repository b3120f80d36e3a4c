"""Rollouts in, difficulty out.

- POST /api/v1/samples/?solver=NAME   a samples file (multipart `file`, or the raw
  body); checked whole, stored, run on the sandbox queue. The same file again
  adds nothing. Curators, reviewers and trainers.
- GET  /api/v1/samples/{id}/          an upload's progress.
- POST /api/v1/outcomes/              outcomes a trainer computed itself, stored
  as trusted attempts (marked so); trainers only. Idempotent per
  (solver, task, sample_id).
- GET  /api/v1/pass-at-k/?task=&solver=   pass@1/5/10 with intervals.
- GET  /api/v1/difficulty/?solver=    the latest fit: each task's difficulty,
  measured or predicted, with its interval and band; the predictor's error.
- POST /api/v1/difficulty/            refit now (enqueued); curators and reviewers.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.api import serializers as s
from evaluation.difficulty.rollouts import outcomes_record, samples_ingest, upload_todo
from evaluation.difficulty.samples import SamplesError
from evaluation.difficulty.selectors import difficulty_table, pass_at_k_rows
from evaluation.models import SampleUpload
from tasks_app.api.parsers import RawUploadParser, uploaded_file
from tasks_app.api.permissions import HasScope
from tasks_app.errors import NotFound, ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role


class HasRolloutRole(BasePermission):
    message = "This needs the curator, reviewer, trainer or admin role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER, TRAINER)


class IsTrainer(BasePermission):
    message = "Posting outcomes computed elsewhere needs the trainer (or admin) role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, TRAINER)


class IsCurator(BasePermission):
    message = "This needs the curator, reviewer or admin role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method in ("GET", "HEAD", "OPTIONS") or has_role(request.user, CURATOR, REVIEWER)


def _upload_body(upload: SampleUpload, **extra: Any) -> dict[str, Any]:
    return {
        "id": upload.pk, "digest": upload.digest, "filename": upload.filename,
        "solver": upload.solver.name if upload.solver else None, "samples": upload.samples,
        "created": upload.created, "total": upload.total, "done": upload.done,
        "finished": upload.finished_at is not None, **extra,
    }  # fmt: skip


class SampleUploadView(APIView):
    permission_classes = [HasScope, HasRolloutRole]
    parser_classes = [MultiPartParser, FormParser, RawUploadParser]

    @extend_schema(
        parameters=[OpenApiParameter("solver", str, description="The solver of lines that name none.")],
        request={
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}},
            "application/x-ndjson": OpenApiTypes.BINARY,
            "application/gzip": OpenApiTypes.BINARY,
        },
        responses={201: s.UploadOut, 200: s.UploadOut},
    )
    def post(self, request: Request) -> Response:
        data, filename = uploaded_file(request, what="the samples")
        solver = request.query_params.get("solver") or (
            request.data.get("solver") if hasattr(request.data, "get") else None
        )
        try:
            ingested = samples_ingest(data=data, solver=solver, filename=filename, source="api", actor=request.user)
        except SamplesError as exc:
            raise ValidationFailed(f"The file was rejected, nothing was stored: {exc}",
                                   details={"line": exc.line, "reason": exc.reason}) from None  # fmt: skip
        from django.db import transaction

        from evaluation.tasks import enqueue_attempts

        if not ingested.repeated:
            upload_id, todo = ingested.upload.pk, upload_todo(ingested.upload)
            transaction.on_commit(lambda: enqueue_attempts(upload_id, todo))
        body = _upload_body(ingested.upload, repeated=ingested.repeated, skipped=ingested.skipped)
        return Response(body, status=200 if ingested.repeated else 201)


class SampleUploadDetailView(APIView):
    permission_classes = [HasScope, HasRolloutRole]

    @extend_schema(responses={200: s.UploadOut})
    def get(self, request: Request, upload_id: int) -> Response:
        upload = SampleUpload.objects.select_related("solver").filter(pk=upload_id).first()
        if upload is None:
            raise NotFound(f"No upload {upload_id}.")
        return Response(_upload_body(upload))


class OutcomesView(APIView):
    permission_classes = [HasScope, IsTrainer]
    parser_classes = [JSONParser]

    @extend_schema(request=s.OutcomesIn, responses={200: s.OutcomesOut})
    def post(self, request: Request) -> Response:
        serializer = s.OutcomesIn(data=request.data)
        if not serializer.is_valid():
            raise ValidationFailed("The outcomes are not valid.", details=serializer.errors)
        try:
            created, skipped = outcomes_record(outcomes=serializer.validated_data["outcomes"], actor=request.user)
        except SamplesError as exc:
            raise ValidationFailed(f"Nothing was stored: {exc}", details={"index": exc.line - 1}) from None
        return Response({"created": created, "skipped": skipped})


class PassAtKView(APIView):
    permission_classes = [HasScope, HasRolloutRole]

    @extend_schema(parameters=[OpenApiParameter("task", str), OpenApiParameter("solver", str)],
                   responses={200: s.PassAtKOut(many=True)})  # fmt: skip
    def get(self, request: Request) -> Response:
        return Response(pass_at_k_rows(task=request.query_params.get("task", ""),
                                       solver=request.query_params.get("solver", "")))  # fmt: skip


class DifficultyView(APIView):
    permission_classes = [HasScope, HasRolloutRole, IsCurator]

    @extend_schema(parameters=[OpenApiParameter("solver", str, description="Bands against this solver.")],
                   responses={200: s.DifficultyOut})  # fmt: skip
    def get(self, request: Request) -> Response:
        try:
            table = difficulty_table(solver=request.query_params.get("solver") or None)
        except ValueError as exc:
            raise ValidationFailed(str(exc), details={"solver": [str(exc)]}) from None
        if table is None:
            raise NotFound("No difficulty fit yet: ingest samples, then refit.")
        return Response(table)

    @extend_schema(request=None, responses={202: s.RefitOut})
    def post(self, request: Request) -> Response:
        from django.db import transaction

        from evaluation.tasks import fit_difficulty

        transaction.on_commit(lambda: fit_difficulty.delay())
        return Response({"enqueued": True}, status=202)
