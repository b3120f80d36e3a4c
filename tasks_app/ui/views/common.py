"""What every page view shares: rendering domain errors with their status, and the
gate in front of task content."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tasks_app.errors import DomainError, PermissionDenied, ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, has_role

_TITLES = {400: "Invalid request", 403: "Not allowed", 404: "Not found", 409: "Conflict"}


def error_response(request: HttpRequest, exc: DomainError, *, title: str = "") -> HttpResponse:
    """A page (or, for htmx, a fragment) that explains a domain error, with its status."""
    template = "tasks_app/_error_banner.html" if request.htmx else "tasks_app/error.html"
    context = {"error": exc, "title": title or _TITLES.get(exc.status, "Error")}
    return render(request, template, context, status=exc.status)


def domain_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Turn a DomainError that a view does not handle itself into its 4xx page, never a 500."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except DomainError as exc:
            return error_response(request, exc)

    return wrapper


def authoring_role_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Task content (statements, hidden tests, solutions, runs and their reports) is for
    curators, reviewers and admins, as in the API (HasAuthoringRole). A trainer works from
    curated pools, whose hidden tests need a token's `export:tests` scope; a page that
    showed them to any signed-in account would undo that scope. Goes under login_required."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not has_role(request.user, CURATOR, REVIEWER):
            denied = PermissionDenied("Task pages are for curators, reviewers and admins; ask an admin for a role.")
            return error_response(request, denied)
        return view(request, *args, **kwargs)

    return wrapper


def version_number(raw: str | None, *, field: str) -> int:
    """A version number from a query parameter; anything else is a 400 naming the parameter."""
    value = (raw or "").strip()
    # Nine digits keeps the value inside the database's integer range.
    if not (value.isascii() and value.isdigit()) or len(value) > 9:
        raise ValidationFailed(
            f"{field} must be a version number, got {raw!r}.",
            details={field: ["Expected a whole number such as 2."]},
        )
    return int(value)
