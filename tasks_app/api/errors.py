"""One error shape for every API error: {"error": {"code", "message", "details"}}.

DRF exceptions, domain errors and Django's own 4xx conditions (oversized
bodies, unknown URLs under /api/) all come out in that shape; bad input is a
4xx that says what and where, never a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from tasks_app.errors import DomainError, ImmutableVersionError

log = logging.getLogger(__name__)

# A database that does not answer (restarting, failing over, out of connections): a 503
# with Retry-After says "come back", where a 500 would say "broken".
DATABASE_DOWN = "The database is not answering, so this request could not be completed. Try again in a moment."
RETRY_AFTER_S = 5

_DRF_CODES = {
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "invalid",
}


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details if details is not None else {}}}


def _flatten_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            return f"{key}: {_flatten_message(value)}"
        return "Invalid input."
    if isinstance(detail, list):
        return _flatten_message(detail[0]) if detail else "Invalid input."
    return str(detail)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        retry_after = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status, headers=headers)
    if isinstance(exc, ImmutableVersionError):
        return Response(error_body("immutable", str(exc)), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("too_large", "The request body exceeds the upload limit.", {"limit_bytes": _upload_limit()}),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, (SuspiciousOperation, TooManyFieldsSent)):
        return Response(error_body("bad_request", str(exc) or "Bad request."), status=400)
    if isinstance(exc, (OperationalError, InterfaceError)):  # the database went away: come back, not a 500
        log.warning("API request failed, the database is not answering: %s", exc)
        return Response(error_body("database_unavailable", DATABASE_DOWN), status=503,
                        headers={"Retry-After": str(RETRY_AFTER_S)})  # fmt: skip
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "error")
    detail = getattr(exc, "detail", response.data)
    if isinstance(exc, exceptions.ValidationError):
        details = detail if isinstance(detail, dict) else {"non_field_errors": detail}
        message = _flatten_message(details)
    else:
        details = {}
        message = str(detail)
    response.data = error_body(code, message, details)
    return response


def _upload_limit() -> int:
    from django.conf import settings

    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class ApiErrorMiddleware:
    """Gives /api/ responses that Django (not DRF) produces the same error shape:
    unknown URLs, and unexpected server errors (logged, with no internals leaked)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith("/api/")
            and response.status_code == 404
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}."), status=404)
        return response

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not request.path.startswith("/api/"):
            return None
        if isinstance(exc, RequestDataTooBig):
            return JsonResponse(
                error_body("too_large", "The request body exceeds the upload limit.", {"limit_bytes": _upload_limit()}),
                status=413,
            )
        log.exception("Unhandled error on %s %s", request.method, request.path)
        return JsonResponse(error_body("server_error", "An unexpected error occurred; it has been logged."), status=500)
