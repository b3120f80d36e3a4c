"""REST API views under /api/v1/. Thin: parse input, call one service or selector,
return its result. Errors are raised as domain errors and rendered by errors.py."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app import selectors, services
from tasks_app.api import serializers as s
from tasks_app.api.auth import request_scopes
from tasks_app.api.parsers import RawUploadParser, uploaded_file
from tasks_app.api.permissions import HasScope
from tasks_app.content import SUITE_KINDS, SolutionContent, VersionContent
from tasks_app.diff import version_diff
from tasks_app.errors import NotFound, PermissionDenied, ValidationFailed
from tasks_app.importers import tasks_export, tasks_import
from tasks_app.models import ApiToken, State, Task, TaskVersion, Transition
from tasks_app.roles import CURATOR, REVIEWER, has_role, user_roles

ERRORS = {code: OpenApiResponse(s.ErrorOut, description=text) for code, text in {
    400: "Invalid input; details name each field.",
    401: "Not authenticated.",
    403: "Missing role or token scope.",
    404: "Not found.",
    409: "Conflict: transition not allowed, stale edit, duplicate slug.",
}.items()}  # fmt: skip


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {c: ERRORS[c] for c in codes}


class HasAuthoringRole(BasePermission):
    """Task content (hidden tests included) is for curators, reviewers and admins;
    trainers get curated pools, not the authoring API."""

    message = "This needs the curator, reviewer or admin role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER)


def require_scope(request: Request, scope: str) -> None:
    if scope not in request_scopes(request):
        raise PermissionDenied(f"This token lacks the '{scope}' scope needed for this call.", code="missing_scope")


def _parse(serializer_class: type, request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ValidationFailed(
            f"Expected a JSON object, got {type(request.data).__name__}.", details={"body": ["Expected an object."]}
        )
    serializer = serializer_class(data=request.data)
    if not serializer.is_valid():
        raise ValidationFailed(_first_message(serializer.errors), details=_flatten(serializer.errors))
    return serializer.validated_data


def _flatten(errors: dict[str, Any]) -> dict[str, Any]:
    """Nested content errors already carry full paths (`version.solutions[0].code`);
    lift them to the top so every field path is a key of `details`."""
    flat: dict[str, Any] = {}
    for key, value in errors.items():
        key = str(key)
        if isinstance(value, dict):
            for sub, messages in _flatten(value).items():
                sub = str(sub)
                if sub.isdigit():
                    flat[f"{key}[{sub}]"] = messages  # a list item's errors
                else:
                    flat[sub if "." in sub else f"{key}.{sub}"] = messages
        else:
            flat[key] = [str(v) for v in value] if isinstance(value, list) else value
    return flat


def _first_message(errors: dict[str, Any]) -> str:
    path, messages = next(iter(_flatten(errors).items()))
    first = messages[0] if isinstance(messages, list) and messages else messages
    return f"{path}: {first}"


TASK_FILTER_PARAMS = [
    OpenApiParameter("q", str, description="Full-text search over title, statement and tags."),
    OpenApiParameter("state", str, enum=State.values),
    OpenApiParameter("tag", str),
    OpenApiParameter("author", str, description="Owner's username."),
    OpenApiParameter("suite_kind", str, enum=list(SUITE_KINDS)),
    OpenApiParameter("sort", str, enum=list(selectors.SORTS)),
]


class TaskListView(generics.GenericAPIView):
    permission_classes = [HasScope, HasAuthoringRole]
    serializer_class = s.TaskOut
    queryset = Task.objects.none()  # for the schema generator; reads go through selectors

    @extend_schema(parameters=TASK_FILTER_PARAMS, responses={200: s.TaskOut(many=True), **errors(400, 401, 403, 404)})
    def get(self, request: Request) -> Response:
        queryset = selectors.task_list(filters=selectors.TaskFilters.from_params(request.query_params))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(s.TaskOut(page, many=True).data)

    @extend_schema(request=s.TaskCreateInput, responses={201: s.TaskOut, **errors(400, 401, 403, 409)})
    def post(self, request: Request) -> Response:
        data = _parse(s.TaskCreateInput, request)
        task = services.task_create(
            actor=request.user,
            slug=data["slug"],
            title=data["title"],
            tags=data["tags"],
            content=data["version"],
            changelog=data["changelog"],
        )
        return Response(s.TaskOut(selectors.task_get(slug=task.slug)).data, status=status.HTTP_201_CREATED)


class TaskDetailView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(responses={200: s.TaskOut, **errors(401, 403, 404)})
    def get(self, request: Request, slug: str) -> Response:
        return Response(s.TaskOut(selectors.task_get(slug=slug)).data)

    @extend_schema(request=s.TaskUpdateInput, responses={200: s.TaskOut, **errors(400, 401, 403, 404)})
    def patch(self, request: Request, slug: str) -> Response:
        data = _parse(s.TaskUpdateInput, request)
        task = selectors.task_get(slug=slug)
        services.task_update_details(actor=request.user, task=task, title=data.get("title"), tags=data.get("tags"))
        return Response(s.TaskOut(selectors.task_get(slug=slug)).data)


class VersionListView(generics.GenericAPIView):
    permission_classes = [HasScope, HasAuthoringRole]
    serializer_class = s.VersionSummaryOut
    queryset = TaskVersion.objects.none()  # for the schema generator; reads go through selectors

    @extend_schema(responses={200: s.VersionSummaryOut(many=True), **errors(400, 401, 403, 404)})
    def get(self, request: Request, slug: str) -> Response:
        task = selectors.task_get(slug=slug)
        page = self.paginate_queryset(selectors.task_versions(task=task))
        return self.get_paginated_response(s.VersionSummaryOut(page, many=True).data)

    @extend_schema(
        request=s.VersionCreateInput,
        responses={201: s.VersionCreatedOut, 200: s.VersionCreatedOut, **errors(400, 401, 403, 404, 409)},
        description="Save new content as the next version. Unchanged content returns the newest version (200).",
    )
    def post(self, request: Request, slug: str) -> Response:
        data = _parse(s.VersionCreateInput, request)
        task = selectors.task_get(slug=slug)
        result = services.task_version_create(
            actor=request.user,
            task=task,
            content=data["version"],
            changelog=data["changelog"],
            base_number=data.get("base_number"),
        )
        version = selectors.task_version_get(task=task, number=result.version.number)
        body = {"created": result.created, "version": s.VersionOut(version).data}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class VersionDetailView(APIView):
    """Versions are read-only once created: PUT, PATCH and DELETE answer 405."""

    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(responses={200: s.VersionOut, **errors(401, 403, 404)})
    def get(self, request: Request, slug: str, number: int) -> Response:
        task = selectors.task_get(slug=slug)
        return Response(s.VersionOut(selectors.task_version_get(task=task, number=number)).data)


class SolutionListView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(responses={200: s.SolutionOut(many=True), **errors(401, 403, 404)})
    def get(self, request: Request, slug: str, number: int) -> Response:
        task = selectors.task_get(slug=slug)
        version = selectors.task_version_get(task=task, number=number)
        return Response(s.SolutionOut(version.solutions.all(), many=True).data)

    @extend_schema(
        request=s.SolutionAddInput,
        responses={201: s.VersionCreatedOut, **errors(400, 401, 403, 404, 409)},
        description="Versions are immutable, so adding a solution to version N saves version N+1 "
        "(N must be the newest version).",
    )
    def post(self, request: Request, slug: str, number: int) -> Response:
        data = _parse(s.SolutionAddInput, request)
        task = selectors.task_get(slug=slug)
        base = selectors.task_version_get(task=task, number=number)
        raw = selectors.version_input(version=base)
        new_solution = SolutionContent(role=data["role"], label=data["label"], code=data["code"], note=data["note"])
        raw["solutions"].append(new_solution.canonical())
        content = VersionContent.parse(raw)
        changelog = data["changelog"] or f"Add {data['role']} solution {data['label']!r}."
        result = services.task_version_create(
            actor=request.user, task=task, content=content, changelog=changelog, base_number=number
        )
        version = selectors.task_version_get(task=task, number=result.version.number)
        return Response({"created": result.created, "version": s.VersionOut(version).data}, status=201)


class DiffView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(
        parameters=[
            OpenApiParameter("left", int, description="Version number; default: the right side's parent."),
            OpenApiParameter("right", int, description="Version number; default: the newest."),
        ],
        responses={200: s.DiffOut, **errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        task = selectors.task_get(slug=slug)
        numbers: dict[str, int | None] = {}
        for side in ("left", "right"):
            raw = request.query_params.get(side)
            try:
                numbers[side] = int(raw) if raw not in (None, "") else None
            except ValueError as exc:
                raise ValidationFailed(f"{side} must be a version number.", details={side: [f"Got {raw!r}."]}) from exc
        right = selectors.task_version_get(task=task, number=numbers["right"] or task.latest_version.number)
        left_number = numbers["left"] or (right.parent.number if right.parent_id else right.number)
        left = selectors.task_version_get(task=task, number=left_number)
        return Response(version_diff(left=left, right=right))


class TransitionListView(generics.GenericAPIView):
    permission_classes = [HasScope, HasAuthoringRole]
    serializer_class = s.TransitionOut
    queryset = Transition.objects.none()
    # Which scope a POST needs depends on the target state; checked in post().
    scope_by_method = {"POST": ("write", "review")}

    @extend_schema(responses={200: s.TransitionOut(many=True), **errors(400, 401, 403, 404)})
    def get(self, request: Request, slug: str) -> Response:
        task = selectors.task_get(slug=slug)
        page = self.paginate_queryset(selectors.task_history(task=task))
        return self.get_paginated_response(s.TransitionOut(page, many=True).data)

    @extend_schema(
        request=s.TransitionInput,
        responses={201: s.TransitionOut, **errors(400, 401, 403, 404, 409)},
        description="Approving, rejecting or requesting changes (a verified or flagged task back to draft) "
        "needs the 'review' scope; other moves need 'write'.",
    )
    def post(self, request: Request, slug: str) -> Response:
        data = _parse(s.TransitionInput, request)
        task = selectors.task_get(slug=slug)
        reviewing = data["to_state"] in (State.APPROVED, State.REJECTED) or (
            data["to_state"] == State.DRAFT and task.state in (State.VERIFIED, State.FLAGGED)
        )
        require_scope(request, "review" if reviewing else "write")
        transition = services.task_transition(
            actor=request.user, task=task, to_state=data["to_state"], note=data["note"]
        )
        return Response(s.TransitionOut(transition).data, status=status.HTTP_201_CREATED)


class ReviewQueueView(generics.GenericAPIView):
    permission_classes = [HasScope, HasAuthoringRole]
    serializer_class = s.TaskOut
    queryset = Task.objects.none()  # for the schema generator; reads go through selectors

    @extend_schema(responses={200: s.TaskOut(many=True), **errors(400, 401, 403, 404)})
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(selectors.review_queue())
        return self.get_paginated_response(s.TaskOut(page, many=True).data)


class ImportView(APIView):
    """Import a file of tasks (HumanEval, MBPP or native JSONL, plain or gzip).

    Send it as multipart (`file` field) or as the raw body with Content-Type
    application/x-ndjson, application/jsonl, application/gzip or
    application/octet-stream. The whole file is imported or none of it.
    """

    permission_classes = [HasScope, HasAuthoringRole]
    parser_classes = [MultiPartParser, FormParser, RawUploadParser]

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=["humaneval", "mbpp", "native"], description="Default: detected."),
            OpenApiParameter("dry_run", bool, description="Validate and report without writing."),
        ],
        request={
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}},
            "application/x-ndjson": OpenApiTypes.BINARY,
            "application/gzip": OpenApiTypes.BINARY,
        },
        responses={200: s.ImportReportOut, **errors(400, 401, 403)},
    )
    def post(self, request: Request) -> Response:
        data, filename = uploaded_file(request)
        dry_run = request.query_params.get("dry_run", "").lower() in ("1", "true", "yes")
        report = tasks_import(
            actor=request.user,
            data=data,
            fmt=request.query_params.get("format") or None,
            filename=filename,
            dry_run=dry_run,
        )
        body = report.to_dict()
        if report.rejected:
            raise ValidationFailed(
                f"The file was rejected: {report.rejected} bad line(s); nothing was imported. "
                f"First: line {report.errors[0]['line']}: {report.errors[0]['message']}",
                details=body,
                code="import_rejected",
            )
        return Response(body)


class ExportView(APIView):
    """Tasks in the platform's native JSONL format, which /import/ reads back exactly."""

    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(
        parameters=TASK_FILTER_PARAMS,
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR, **errors(400, 401, 403)},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        require_scope(request, "export")
        queryset = selectors.task_list(filters=selectors.TaskFilters.from_params(request.query_params))
        response = StreamingHttpResponse(tasks_export(queryset=queryset), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="tasks.jsonl"'
        return response


class MeView(APIView):
    @extend_schema(responses={200: s.MeOut, **errors(401)})
    def get(self, request: Request) -> Response:
        return Response(
            {
                "username": request.user.get_username(),
                "roles": sorted(user_roles(request.user)),
                "scopes": sorted(request_scopes(request)),
            }
        )


class TokenListView(APIView):
    """Your own API tokens. Creating one returns its secret once."""

    @extend_schema(responses={200: s.TokenOut(many=True), **errors(401)})
    def get(self, request: Request) -> Response:
        return Response(s.TokenOut(ApiToken.objects.filter(user=request.user), many=True).data)

    @extend_schema(request=s.TokenCreateInput, responses={201: s.TokenCreatedOut, **errors(400, 401, 403)})
    def post(self, request: Request) -> Response:
        data = _parse(s.TokenCreateInput, request)
        granted = request_scopes(request)
        if not set(data["scopes"]) <= granted:
            raise PermissionDenied("A token cannot grant scopes that the caller's own credentials lack.")
        issued = services.api_token_create(
            user=request.user, name=data["name"], scopes=data["scopes"], expires_at=data["expires_at"]
        )
        body = {**s.TokenOut(issued.token).data, "token": issued.secret}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    @extend_schema(responses={204: None, **errors(401, 404)})
    @transaction.atomic
    def delete(self, request: Request, token_id: int) -> Response:
        token = ApiToken.objects.filter(user=request.user, pk=token_id).first()
        if token is None:
            raise NotFound(f"You have no token {token_id}.")
        services.api_token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
