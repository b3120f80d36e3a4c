"""Counters by backend and status, one structured log line per execution, and the
reports of this process's sandbox pools that workers publish to Redis for /metrics
and /healthz on the web hosts (config/ops/)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections import Counter
from typing import Any

log = logging.getLogger("evaluation.runs")
_counts: Counter[tuple[str, str]] = Counter()
_anomalies: Counter[tuple[str, str]] = Counter()
# Sandbox starts that failed, and those of them retried, by (backend, reason): every
# one, whether the caller saw it or a retry hid it (evaluation/sandbox/starts.py).
_start_failures: Counter[tuple[str, str]] = Counter()
_start_retries: Counter[tuple[str, str]] = Counter()
_lock = threading.Lock()


class _JsonText:
    """The line as JSON text, encoded only if a handler formats it as text."""

    __slots__ = ("line",)

    def __init__(self, line: dict[str, Any]) -> None:
        self.line = line

    def __str__(self) -> str:
        return json.dumps(self.line, sort_keys=True, default=str)


def record_execution(line: dict[str, Any]) -> None:
    with _lock:
        _counts[(line["backend"], line["status"])] += 1
        if line.get("anomaly"):
            _anomalies[(line["backend"], line["anomaly"])] += 1
    if log.isEnabledFor(logging.INFO):
        # The message reads as the JSON text of the line (plain logs, replay tools); the
        # JSON formatter takes `json_fields` instead, so the line is not encoded twice.
        log.info("%s", _JsonText(line), extra={"json_fields": line})


def record_start_failure(line: dict[str, Any]) -> None:
    """Count a failed sandbox start (and its retry, if `line["retry"]`) and log it as
    one JSON line: event, backend, kind, reason, attempt, retry, detail."""
    key = (line["backend"], line["reason"])
    with _lock:
        _start_failures[key] += 1
        if line.get("retry"):
            _start_retries[key] += 1
    # A retried failure is the platform coping; one that reaches the caller is an error.
    level = logging.INFO if line.get("retry") else logging.WARNING
    if log.isEnabledFor(level):
        log.log(level, "%s", _JsonText(line), extra={"json_fields": line})


def start_counts(backend: str | None = None) -> dict[str, dict[str, int]]:
    """{"start_failures": {reason: n}, "start_retries": {reason: n}} of this process,
    for one backend; or keyed "backend:reason" for all of them."""

    def pick(counter: Counter[tuple[str, str]]) -> dict[str, int]:
        if backend is None:
            return {f"{b}:{r}": n for (b, r), n in sorted(counter.items())}
        return {r: n for (b, r), n in sorted(counter.items()) if b == backend}

    with _lock:
        return {"start_failures": pick(_start_failures), "start_retries": pick(_start_retries)}


def snapshot() -> dict[str, Any]:
    starts = start_counts()
    with _lock:
        return {
            "executions": {f"{b}:{s}": n for (b, s), n in sorted(_counts.items())},
            "anomalies": {f"{b}:{a}": n for (b, a), n in sorted(_anomalies.items())},
            **starts,
        }


def reset() -> None:
    with _lock:
        _counts.clear()
        _anomalies.clear()
        _start_failures.clear()
        _start_retries.clear()


# -- pool reports: each sandbox worker process tells Redis how its pools stand ------------------

POOL_REPORT_PREFIX = "platform:sandbox-pool:"
# Each report outlives three missed beats, so one slow beat does not make a worker vanish.
REPORT_TTL_FACTOR = 3
POOL_STAT_KEYS = ("size", "leased", "idle", "started", "recycled", "reaped")


def report_interval_s() -> float:
    return max(0.2, float(os.environ.get("SANDBOX_POOL_REPORT_S", "15")))


def backend_problem(backend: str) -> str | None:
    """Why `backend` cannot start sandboxes on this host, in a few words; None when it can.
    Cheap enough for every report: a PATH lookup, or a Docker ping and an image lookup."""
    if backend == "bwrap":
        if shutil.which("bwrap") is None:
            return "bubblewrap (bwrap) is not installed"
        from evaluation.sandbox.bwrap import DEFAULT_PYTHON

        if not os.access(os.environ.get("SANDBOX_PYTHON", DEFAULT_PYTHON), os.X_OK):
            return "the sandbox interpreter (SANDBOX_PYTHON) is missing"
        return None
    if backend == "docker":
        import docker

        from evaluation.sandbox.docker_backend import IMAGE

        try:
            client = docker.from_env(timeout=3)
        except Exception:
            return "no Docker engine configured"
        try:
            try:
                client.ping()
            except Exception:
                return "the Docker engine does not answer"
            try:
                client.images.get(IMAGE)
            except Exception:
                return f"the sandbox image {IMAGE} is missing"
            return None
        finally:
            client.close()
    return f"unknown sandbox backend {backend!r}"


def pool_reports(host: str) -> list[dict[str, Any]]:
    """One report per sandbox pool of this process: its stats, and whether its backend
    can run a verification. The configured backend's pool is created if no run has yet
    (creating one starts nothing), so an idle worker reports its capacity too."""
    from evaluation.sandbox import engine
    from evaluation.sandbox.probe import backend_status

    with _lock:
        failed = {backend for backend, _reason in _start_failures}
    backends = {engine.default_backend(), *engine._pools, *failed}
    reports = []
    for backend in sorted(backends):
        try:
            stats = engine.get_pool(backend).stats()
        except Exception:  # an unknown backend name: reported, never fatal to the worker
            stats = {}
        reports.append(
            {
                "host": host,
                "pid": os.getpid(),
                "backend": backend,
                **{key: int(stats.get(key, 0)) for key in POOL_STAT_KEYS},
                **start_counts(backend),  # cold starts too, not the pool's alone
                # A real sandbox run, at most every PROBE_TTL_S: a package present is not
                # a backend that works (evaluation/sandbox/probe.py).
                "problem": backend_status(backend),
                "at": time.time(),
            }
        )
    return reports


class PoolReporter:
    """A daemon thread that publishes this process's pool reports to Redis every
    `interval_s`, each under a key of its own that expires unless renewed: a worker
    that dies stops being counted within REPORT_TTL_FACTOR beats. `stop()` deletes
    the keys at once (a warm shutdown)."""

    def __init__(self, redis_url: str, host: str, *, interval_s: float | None = None) -> None:
        self.redis_url = redis_url
        self.host = host
        self.interval_s = interval_s or report_interval_s()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._keys: set[str] = set()
        self._client: Any = None
        self._failing = False

    def _redis(self) -> Any:
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(self.redis_url, socket_timeout=5, socket_connect_timeout=5)
        return self._client

    def publish(self) -> list[dict[str, Any]]:
        reports = pool_reports(self.host)
        ttl_ms = int(self.interval_s * REPORT_TTL_FACTOR * 1000)
        pipe = self._redis().pipeline(transaction=False)
        for report in reports:
            key = f"{POOL_REPORT_PREFIX}{self.host}|{report['pid']}|{report['backend']}"
            self._keys.add(key)
            pipe.set(key, json.dumps(report), px=ttl_ms)
        pipe.execute()
        return reports

    def start(self) -> PoolReporter:
        self._thread = threading.Thread(target=self._run, name="sandbox-pool-reporter", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.publish()
                if self._failing:
                    log.info("sandbox pool reports reach Redis again")
                self._failing = False
            except Exception as exc:  # Redis down: the worker goes on; log the first failure only
                if not self._failing:
                    log.warning("cannot publish sandbox pool reports: %s", type(exc).__name__)
                self._failing = True
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        try:
            if self._keys:
                self._redis().delete(*self._keys)
        except Exception:  # noqa: S110 - the keys expire by themselves
            pass
        if self._client is not None:
            self._client.close()


def read_pool_reports(client: Any) -> list[dict[str, Any]]:
    """Every live report in the Redis database of `client` (a redis.Redis)."""
    keys = sorted(client.scan_iter(match=f"{POOL_REPORT_PREFIX}*", count=500))
    if not keys:
        return []
    reports = []
    for raw in client.mget(keys):
        if raw is None:  # expired between SCAN and MGET
            continue
        try:
            report = json.loads(raw)
        except ValueError:
            continue
        if isinstance(report, dict) and "host" in report and "backend" in report:
            reports.append(report)
    return reports
