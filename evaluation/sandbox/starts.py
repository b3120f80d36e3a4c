"""Starting a sandbox: every failed start counted, a transient one retried where the
run that wanted the sandbox never sees it.

A start that fails is the infrastructure's fault, never a solution's: no solution
code has run. Most such failures are the host's for a moment (a process that
could not fork under load, a sandbox killed from outside while it came up), and a
second start a moment later succeeds; one the backend cannot ever serve
(`backend_missing`: no bwrap, no Docker engine or image) is not retried. Both the
warm pool (pool.py) and the cold-sandbox path (engine.cold_sandbox) start through
`start_sandbox`, which counts each failed attempt by backend and reason in the
sandbox counters (counters.record_start_failure: a Prometheus counter on /metrics
and one JSON log line) and retries up to SANDBOX_START_ATTEMPTS attempts in all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from evaluation.sandbox import counters
from evaluation.sandbox.errors import SandboxFailure

T = TypeVar("T")
DEFAULT_ATTEMPTS = 3
RETRY_PAUSE_S = 0.05  # times the attempt number: a host short of something for a moment gets a moment
NOT_RETRIED = frozenset({"backend_missing"})
# Failure reasons, a small fixed set (a metrics label); what the message says, for
# failures raised without one (the Docker backend's).
REASONS = ("channel_closed", "killed", "greeting_timeout", "bad_greeting", "setup_failed", "launch_failed",
           "template_failed", "uids_exhausted", "engine_error", "backend_missing", "os_error", "other")  # fmt: skip
_BY_MESSAGE = (
    ("closed its channel", "channel_closed"),
    ("did not answer in time", "greeting_timeout"),
    ("unexpected greeting", "bad_greeting"),
    ("could not start a container", "engine_error"),
)


def start_attempts() -> int:
    """SANDBOX_START_ATTEMPTS (default 3): how many times one start is tried in all."""
    raw = os.environ.get("SANDBOX_START_ATTEMPTS", "").strip()
    try:
        attempts = int(raw) if raw else DEFAULT_ATTEMPTS
    except ValueError:
        raise ValueError(f"SANDBOX_START_ATTEMPTS={raw!r} is not a whole number (1 or more)") from None
    if attempts < 1:
        raise ValueError(f"SANDBOX_START_ATTEMPTS={raw!r}: at least 1 attempt")
    return attempts


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, SandboxFailure):
        if exc.anomaly == "backend_missing":
            return "backend_missing"
        if exc.reason in REASONS:
            return exc.reason
        text = str(exc)
        return next((reason for marker, reason in _BY_MESSAGE if marker in text), "other")
    return "os_error" if isinstance(exc, OSError) else "other"


def count_failure(exc: BaseException, *, backend: str, kind: str, attempt: int, retry: bool) -> str:
    """Count one failed start attempt (metrics and a JSON log line); returns its reason."""
    reason = failure_reason(exc)
    counters.record_start_failure({"event": "sandbox_start_failure", "backend": backend, "kind": kind,
                                  "reason": reason, "attempt": attempt, "retry": retry,
                                  "detail": str(exc)[:500]})  # fmt: skip
    return reason


def start_sandbox(start: Callable[[], T], *, backend: str | Callable[[], str], kind: str) -> T:
    """`start()` (which makes and starts a new sandbox each call) until one comes up,
    at most start_attempts() times. `backend` names the backend for the metrics (or
    tells it once an attempt has made a sandbox); `kind` says which start it was
    (warm, fresh, exec...) for the log line. An OSError on the way (a pipe or a fork
    the host refused) counts as a failed start like the rest. Raises the last failure
    as a SandboxFailure (start_failed, or backend_missing) once the attempts are spent."""
    attempts = start_attempts()
    attempt = 0
    while True:
        attempt += 1
        try:
            return start()
        except (SandboxFailure, OSError) as exc:
            retry = attempt < attempts and failure_reason(exc) not in NOT_RETRIED
            name = backend() if callable(backend) else backend
            reason = count_failure(exc, backend=name, kind=kind, attempt=attempt, retry=retry)
            if not retry:
                if isinstance(exc, SandboxFailure):
                    raise
                raise SandboxFailure(
                    f"could not start a sandbox: {exc}", anomaly="start_failed", reason=reason
                ) from exc
        time.sleep(RETRY_PAUSE_S * attempt)
