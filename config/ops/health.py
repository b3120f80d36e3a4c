"""What /healthz checks: the database, the Celery broker, and the sandbox pools.

Each check returns whether it passed, how long it took and, when it failed, a short
reason. Reasons are written here from the kind of failure, never copied from an
exception's message: those name hosts, ports and sometimes credentials, and the
endpoint answers anyone who asks.

The sandbox check reads what the sandbox workers report through Redis (each
reports every SANDBOX_POOL_REPORT_S whether its backend can run a verification:
evaluation/sandbox/probe.py, a real sandbox started at most every PROBE_TTL_S).
With the embedded filesystem broker there is no Redis to report through, and the
web runs beside its worker on one machine, so it probes the configured backend
itself, through the same cache.

Which checks make /healthz fail: HEALTH_REQUIRED_CHECKS when set; otherwise the
database and the broker, and the sandbox where the web checks it itself (the
embedded defaults: one machine whose sandbox cannot start verifies nothing at
all). With Redis the sandbox is reported, not required: a web host still serves
curation while sandbox workers are away, and a load balancer taking it out of
rotation would not bring them back. Either way an admin sees the reason on every
page (sandbox_alert, config/ops/context.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connections

CHECKS = ("database", "broker", "sandbox")
_TIMEOUT_S = 2.0


@dataclass
class CheckResult:
    ok: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def redis_url() -> str | None:
    """The broker's URL when the broker is Redis: where workers publish their pool reports."""
    url = str(settings.CELERY_BROKER_URL or "")
    return url if url.startswith(("redis://", "rediss://")) else None


@lru_cache(maxsize=8)
def redis_client(url: str) -> Any:
    """One client (and connection pool) per URL and process; short timeouts, since a
    scrape or a health probe must answer even when Redis does not."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=_TIMEOUT_S, socket_connect_timeout=_TIMEOUT_S)


def failure_reason(exc: BaseException) -> str:
    """The kind of a failure in a few words, without its message's hosts or credentials."""
    text = str(exc).lower()
    kinds = (
        ("refused", "connection refused"),
        ("timed out", "timed out"),
        ("timeout", "timed out"),
        ("password", "authentication failed"),
        ("authentic", "authentication failed"),
        ("does not exist", "does not exist"),
        ("name or service not known", "host name does not resolve"),
        ("nodename nor servname", "host name does not resolve"),
        ("temporary failure in name resolution", "host name does not resolve"),
    )
    for needle, words in kinds:
        if needle in text:
            return f"{type(exc).__name__}: {words}"
    return type(exc).__name__


def check_database() -> CheckResult:
    connection = connections["default"]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        # A broken connection would fail every later check in this thread too: drop it.
        connection.close_if_unusable_or_obsolete()
        return CheckResult(False, failure_reason(exc))
    return CheckResult(True, details={"vendor": connection.vendor})


def check_broker() -> CheckResult:
    url = str(settings.CELERY_BROKER_URL or "")
    if url.startswith(("redis://", "rediss://")):
        try:
            redis_client(url).ping()
        except Exception as exc:
            return CheckResult(False, failure_reason(exc), {"kind": "redis"})
        return CheckResult(True, details={"kind": "redis"})
    if url.startswith("filesystem://"):
        options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
        folders = [options.get(key) for key in ("data_folder_in", "data_folder_out", "control_folder")]
        for folder in filter(None, folders):
            if not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
                return CheckResult(False, "a broker folder is missing or not writable", {"kind": "filesystem"})
        return CheckResult(True, details={"kind": "filesystem"})
    return CheckResult(False, "the broker's scheme is not one this check knows (redis, filesystem)")


def check_sandbox() -> CheckResult:
    from evaluation.sandbox.engine import default_backend
    from evaluation.sandbox.pool_reports import read_pool_reports
    from evaluation.sandbox.probe import backend_status

    url = redis_url()
    if url is None:
        backend = default_backend()
        problem = backend_status(backend)
        return CheckResult(problem is None, problem or "", {"backend": backend, "source": "local"})
    try:
        reports = read_pool_reports(redis_client(url))
    except Exception as exc:
        return CheckResult(False, f"cannot read the workers' reports: {failure_reason(exc)}", {"source": "workers"})
    hosts = {report["host"] for report in reports}
    details: dict[str, Any] = {
        "source": "workers",
        "workers": len(hosts),
        "backends": dict(Counter(str(report["backend"]) for report in reports)),
    }
    if not reports:
        return CheckResult(False, "no sandbox worker has reported recently", details)
    broken = sorted({(str(r["host"]), str(r["backend"]), str(r["problem"])) for r in reports if r.get("problem")})
    if broken:
        details["unusable"] = len({host for host, _, _ in broken})
        host, backend, problem = broken[0]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        return CheckResult(False, f"{host} ({backend}): {problem}{more}", details)
    return CheckResult(True, details=details)


RUNNERS: dict[str, Callable[[], CheckResult]] = {
    "database": check_database,
    "broker": check_broker,
    "sandbox": check_sandbox,
}


# How long the admin banner trusts the workers' reports before reading them again.
ALERT_TTL_S = 15.0
_alerts: dict[str, tuple[float, str | None]] = {}
_alerts_lock = threading.Lock()


def sandbox_alert() -> str | None:
    """Why verification cannot run, for the admin banner; None when it can. Cheap on
    every page: the local probe behind check_sandbox is cached (evaluation/sandbox/
    probe.py), and the workers' reports are read at most every ALERT_TTL_S."""
    url = redis_url()
    if url is not None:
        with _alerts_lock:
            found = _alerts.get(url)
            if found is not None and time.monotonic() - found[0] < ALERT_TTL_S:
                return found[1]
    try:
        result = check_sandbox()
    except Exception as exc:  # the banner must never break a page
        result = CheckResult(False, failure_reason(exc))
    problem = None if result.ok else result.reason
    if url is not None:
        with _alerts_lock:
            _alerts[url] = (time.monotonic(), problem)
    return problem


def required_checks() -> set[str]:
    """HEALTH_REQUIRED_CHECKS when set; otherwise the database and the broker, and the
    sandbox when this process checks it itself (no Redis: the embedded defaults)."""
    configured = getattr(settings, "HEALTH_REQUIRED_CHECKS", None)
    if configured is not None:
        return set(configured)
    return {"database", "broker"} | ({"sandbox"} if redis_url() is None else set())


def health() -> tuple[bool, dict[str, Any]]:
    """Run every check, in order; (whether all required ones passed, the JSON body)."""
    required = required_checks()
    checks: dict[str, Any] = {}
    failing = []
    for name in CHECKS:
        started = time.perf_counter()
        try:
            result = RUNNERS[name]()
        except Exception as exc:  # a bug in a check is that check failing, not a 500
            result = CheckResult(False, failure_reason(exc))
        entry: dict[str, Any] = {
            "ok": result.ok,
            "required": name in required,
            "ms": round((time.perf_counter() - started) * 1000, 2),
        }
        if not result.ok:
            entry["reason"] = result.reason
            if name in required:
                failing.append(name)
        entry.update(result.details)
        checks[name] = entry
    healthy = not failing
    return healthy, {"status": "ok" if healthy else "fail", "failing": failing, "checks": checks}
