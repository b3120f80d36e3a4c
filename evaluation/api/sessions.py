"""Agent sessions over REST (scope `session`; docs/sessions.md).

- POST   /api/v1/sessions                 {version_hash, limits?, lease_s?}; header Idempotency-Key.
                                          201 with the id, state, lease_expires_at and the first
                                          observation; 200 for a key seen before; 429 + Retry-After
                                          when the host or your quota is full.
- GET    /api/v1/sessions/{id}            the session and its transcript.
- DELETE /api/v1/sessions/{id}            close it (its sandbox and everything in it end).
- POST   /api/v1/sessions/{id}/steps      {seq, action, timeout_s?}; the same seq answers the
                                          stored observation and runs nothing.
- POST   /api/v1/sessions/{id}/fork       {n}: n sessions in the same state.
- POST   /api/v1/sessions/{id}/submit     the verdict: a reward, or null with the reason.
- POST   /api/v1/sessions/{id}/renew      a new lease.
Paths take no trailing slash.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.verification.sessions import services
from tasks_app.api.auth import request_scopes
from tasks_app.api.permissions import HasScope
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role


class CanHoldSessions(BasePermission):
    message = "Sessions are for trainers, curators, reviewers and admins."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER, TRAINER)


class _SessionView(APIView):
    permission_classes = [HasScope, CanHoldSessions]
    scope_by_method = {"GET": ("read", "session"), "POST": ("session",), "DELETE": ("session",)}
    throttle_scope = "sessions"

    def _body(self, request: Request, session: Any, **kwargs: Any) -> dict:
        return services.session_body(session, reveal_hidden="export:tests" in request_scopes(request), **kwargs)

    def _data(self, request: Request) -> dict:
        return request.data if isinstance(request.data, dict) else {}


class SessionListView(_SessionView):
    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT, 429: OpenApiTypes.OBJECT},
                   parameters=[OpenApiParameter("Idempotency-Key", str, location=OpenApiParameter.HEADER)])  # fmt: skip
    def post(self, request: Request) -> Response:
        data = self._data(request)
        session, created = services.session_create(
            user=request.user, version_hash=data.get("version_hash"), limits=data.get("limits"),
            lease_s=data.get("lease_s"), idempotency_key=request.headers.get("Idempotency-Key", ""),
            token=request.auth,
        )  # fmt: skip
        return Response(self._body(request, session), status=201 if created else 200)


class SessionDetailView(_SessionView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        return Response(self._body(request, session, with_steps=True))

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        return Response(self._body(request, services.session_close(session=session)))


class SessionStepView(_SessionView):
    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        data = self._data(request)
        observation, replayed = services.session_step(
            session=session, seq=data.get("seq"), action=data.get("action"), timeout_s=data.get("timeout_s")
        )
        return Response({**observation, "replayed": replayed})


class SessionForkView(_SessionView):
    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        children = services.session_fork(session=session, n=self._data(request).get("n"))
        return Response({"sessions": [self._body(request, child) for child in children]}, status=201)


class SessionSubmitView(_SessionView):
    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        return Response(self._body(request, services.session_submit(session=session)))


class SessionRenewView(_SessionView):
    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, session_id: str) -> Response:
        session = services.session_get(user=request.user, session_id=session_id)
        return Response(self._body(request, services.session_renew(session=session)))
