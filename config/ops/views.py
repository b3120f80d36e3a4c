"""Thin views over config/ops/health.py and config/ops/prometheus.py."""

from __future__ import annotations

import ipaddress
import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from config.ops import health, prometheus
from tasks_app.api.errors import error_body


@never_cache
def livez(request: HttpRequest) -> HttpResponse:
    """The process is up and answering; nothing else is consulted."""
    return JsonResponse({"status": "ok"})


@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    healthy, body = health.health()
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = metrics_refusal(request)
    if refusal is not None:
        return refusal
    # The classic text format (0.0.4), which every Prometheus version reads; the names
    # here need none of the newer format's escaping.
    return HttpResponse(prometheus.render(), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read /metrics, else the answer to give it.

    With METRICS_TOKEN set, only `Authorization: Bearer <METRICS_TOKEN>` may. Without
    it, only a direct caller from a loopback or private address may: a request that
    came through a proxy (it carries X-Forwarded-For) is refused even from the proxy's
    private address, since the proxy may be relaying someone from outside.
    """
    token = getattr(settings, "METRICS_TOKEN", "")
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and secrets.compare_digest(given.strip().encode(), token.encode()):
            return None
        response = JsonResponse(error_body("not_authenticated", "A valid metrics token is required."), status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if "X-Forwarded-For" not in request.headers and _private(request.META.get("REMOTE_ADDR", "")):
        return None
    message = "Metrics are served to direct callers from private addresses, or with METRICS_TOKEN."
    return JsonResponse(error_body("permission_denied", message), status=403)


def _private(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private
