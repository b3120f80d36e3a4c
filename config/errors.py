"""What a page or an API call answers when it fails on the server's side.

A database that does not answer (restarting, failing over, its connections used up)
is a 503 with Retry-After and a sentence that says so, not a bare 500: the client
knows to come back, an operator reading the access log knows what happened. Nothing
here touches the database or a template that would (the failure may be the database).
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from tasks_app.api.errors import DATABASE_DOWN, RETRY_AFTER_S, error_body

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
<h1>{title}</h1><p>{message}</p></body></html>
"""


def database_unavailable(exc: BaseException | None) -> bool:
    return isinstance(exc, (OperationalError, InterfaceError))


def _answer(request: HttpRequest, status: int, code: str, title: str, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(error_body(code, message), status=status)
    else:
        response = HttpResponse(_PAGE.format(title=title, message=message), status=status)
    if status == 503:
        response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: Django calls it inside the except block of the failed request."""
    if database_unavailable(sys.exc_info()[1]):
        return _answer(request, 503, "database_unavailable", "Database unavailable", DATABASE_DOWN)
    return _answer(request, 500, "server_error", "Server error",
                   "Something went wrong on our side; it has been logged.")  # fmt: skip
