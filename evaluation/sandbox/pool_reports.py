"""Reports of this process's sandbox pools, which each sandbox worker publishes to Redis
(config/celery.py starts a PoolReporter), for /metrics and /healthz on the web hosts
(config/ops/): each pool's stats, its failed starts, and whether its backend can run
a verification."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from evaluation.sandbox import engine
from evaluation.sandbox.counters import log, start_counts, start_failure_backends
from evaluation.sandbox.probe import backend_status

POOL_REPORT_PREFIX = "platform:sandbox-pool:"
# Each report outlives three missed beats, so one slow beat does not make a worker vanish.
REPORT_TTL_FACTOR = 3
POOL_STAT_KEYS = ("size", "leased", "idle", "started", "recycled", "reaped")


def report_interval_s() -> float:
    return max(0.2, float(os.environ.get("SANDBOX_POOL_REPORT_S", "15")))


def pool_reports(host: str) -> list[dict[str, Any]]:
    """One report per sandbox pool of this process: its stats, and whether its backend
    can run a verification. The configured backend's pool is created if no run has yet
    (creating one starts nothing), so an idle worker reports its capacity too."""
    backends = {engine.default_backend(), *engine._pools, *start_failure_backends()}
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
