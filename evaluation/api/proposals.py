"""Tests proposed from generated inputs (docs/generated-tests.md), over REST.

- GET  /api/v1/versions/{content_hash}/proposed-tests[?state=]  the tests the
  verifications of the version(s) with that hash proposed; curators and reviewers.
- POST /api/v1/proposed-tests/accept   {"ids": [...]}: a new version per task with
  them added to its hidden tests (then submitted); curators, scope `write`.
- POST /api/v1/proposed-tests/dismiss  {"ids": [...]}; curators, scope `write`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.api import serializers as s
from evaluation.models import ProposedTestState
from evaluation.verification.generated.decisions import proposed_tests_accept_ids, proposed_tests_dismiss_ids
from evaluation.verification.generated.selectors import version_proposals
from tasks_app.api.permissions import HasScope
from tasks_app.api.views import HasAuthoringRole, errors
from tasks_app.errors import ValidationFailed
from tasks_app.roles import CURATOR, has_role


class IsCurator(BasePermission):
    """Accepting a proposed test writes a version: the role that edits tasks."""

    message = "Accepting or dismissing proposed tests needs the curator (or admin) role."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR)


def _paths(problems: dict[Any, Any], prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as {"ids[1]": [message]}: one path a problem, as docs/api.md gives them."""
    flat: dict[str, list[str]] = {}
    for key, value in problems.items():
        path = f"{prefix}[{key}]" if str(key).isdigit() else (f"{prefix}.{key}" if prefix else str(key))
        if isinstance(value, dict):
            flat.update(_paths(value, path))
        else:
            flat[path] = [str(v) for v in (value if isinstance(value, list) else [value])]
    return flat


def _ids(request: Request) -> list[int]:
    serializer = s.ProposedTestIdsIn(data=request.data)
    if not serializer.is_valid():
        raise ValidationFailed.naming(_paths(serializer.errors))
    return serializer.validated_data["ids"]


class VersionProposedTestsView(APIView):
    permission_classes = [HasScope, HasAuthoringRole]

    @extend_schema(
        parameters=[OpenApiParameter("state", str, enum=ProposedTestState.values, description="Only these.")],
        responses={200: s.ProposedTestOut(many=True), **errors(400, 401, 403, 404)},
        description="The hidden tests the verifications of this version proposed from generated inputs: "
        "counterexamples to surviving mutants and hidden tests for all-visible suites.",
    )
    def get(self, request: Request, content_hash: str) -> Response:
        rows = version_proposals(content_hash=content_hash, state=request.query_params.get("state", ""))
        return Response(s.ProposedTestOut(rows, many=True).data)


class ProposedTestsAcceptView(APIView):
    permission_classes = [HasScope, IsCurator]
    parser_classes = [JSONParser]

    @extend_schema(
        request=s.ProposedTestIdsIn,
        responses={200: s.AcceptOut, **errors(400, 401, 403)},
        description="Each task gets one new version with its chosen tests appended to its hidden tests "
        "(recorded in generated_tests) and is submitted. A task whose proposals were made for an older "
        "version, or were decided already, is skipped with the reason; 400 names unknown ids.",
    )
    def post(self, request: Request) -> Response:
        result = proposed_tests_accept_ids(actor=request.user, ids=_ids(request))
        body = {"accepted": result.accepted, "versions": result.versions, "skipped": result.skipped}
        return Response(s.AcceptOut(body).data)


class ProposedTestsDismissView(APIView):
    permission_classes = [HasScope, IsCurator]
    parser_classes = [JSONParser]

    @extend_schema(
        request=s.ProposedTestIdsIn,
        responses={200: s.DismissOut, **errors(400, 401, 403)},
        description="Mark proposals dismissed (the input is outside the task's domain); those decided "
        "already are left as they are and not counted.",
    )
    def post(self, request: Request) -> Response:
        return Response({"dismissed": proposed_tests_dismiss_ids(actor=request.user, ids=_ids(request))})
