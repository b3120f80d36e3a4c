"""The first middleware: it times and counts every request, and answers the operational
endpoints itself, ahead of the rest of the stack.

Answering /livez, /healthz and /metrics here, before SecurityMiddleware and
CommonMiddleware, means a load balancer or Prometheus that calls a web process by
its address (a Host header outside ALLOWED_HOSTS, plain HTTP where production
redirects to HTTPS) still gets an answer, and no session, CSRF or throttling
machinery runs for it. Those endpoints carry no secrets; /metrics checks its own
access (config/ops/views.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from config.ops import views
from config.ops.prometheus import observe_request

ENDPOINTS: dict[str, tuple[str, Callable[[HttpRequest], HttpResponse]]] = {
    "/livez": ("livez", views.livez),
    "/healthz": ("healthz", views.healthz),
    "/metrics": ("metrics", views.metrics),
}


class OpsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        endpoint = ENDPOINTS.get(request.path_info.rstrip("/") or "/")
        if endpoint is not None:
            route, view = endpoint
            response = view(request)
        else:
            response = self.get_response(request)
            route = route_name(request)
        observe_request(
            method=request.method or "", route=route, status=response.status_code, seconds=time.perf_counter() - started
        )
        return response


def route_name(request: HttpRequest) -> str:
    """The resolved route's name (namespaced, e.g. `ui:task-list`), else its pattern;
    `unmatched` for a path no route matched, so scanners cannot grow the label set."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.view_name or match.route or "unnamed"
