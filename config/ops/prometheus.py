"""Prometheus metrics: what /metrics serves (names and labels: docs/operations.md).

Two kinds:
- Request metrics, counted by the middleware in each web process. Under gunicorn
  with several workers set PROMETHEUS_MULTIPROC_DIR (an empty directory at start):
  prometheus_client then keeps each process's values in files there, and a scrape,
  whichever process answers it, adds them all up.
- Figures read at scrape time: Celery queue lengths from the Redis broker, executions
  by status and backend from the database (one aggregate query), and the sandbox pools
  as their workers last reported them to Redis. They are the same whichever web
  process or host answers, so they are computed per scrape, never kept per process.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from config.ops.health import redis_client, redis_url
from evaluation.queues import filesystem_queue_lengths, redis_queue_lengths

# Reward requests wait for their verdicts up to their deadline (REWARD["MAX_DEADLINE_S"]):
# buckets reach that far, where the default ones stop at 10 s.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

# No `_created` series beside every counter and histogram: they double the text for a
# figure (the process start) nobody graphs.
disable_created_metrics()

_request_registry = CollectorRegistry(auto_describe=True)
HTTP_REQUESTS = Counter(
    "platform_http_requests",
    "HTTP requests answered, by method, resolved route name and status class.",
    ["method", "route", "status"],
    registry=_request_registry,
)
HTTP_LATENCY = Histogram(
    "platform_http_request_duration_seconds",
    "Time from the request reaching Django to its response leaving the view (streamed bodies not included).",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
    registry=_request_registry,
)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def platform_queues() -> list[str]:
    """The queues the platform sends to: the default one and every routed one."""
    queues = {str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", None) or "celery")}
    for route in getattr(settings, "CELERY_TASK_ROUTES", {}).values():
        if isinstance(route, dict) and route.get("queue"):
            queues.add(str(route["queue"]))
    if str(settings.CELERY_BROKER_URL or "").startswith("filesystem://"):
        queues.add("rewards")  # trainer_bridge.tasks.reward_queue(): its own queue there
    return sorted(queues)


def _source_up(name: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(
        f"platform_metrics_{name}_up", f"1 when this scrape could read the {name} figures, 0 when it could not."
    )


class ScrapeTimeCollector(Collector):
    """Reads the platform's shared state each time it is collected."""

    def collect(self) -> Iterator[Metric]:
        yield from self._queues()
        yield from self._executions()
        yield from self._pools()

    # -- Celery queues ---------------------------------------------------------------------

    def _queues(self) -> Iterator[Metric]:
        length = GaugeMetricFamily(
            "platform_celery_queue_length", "Messages waiting in a Celery queue (all priorities).", labels=["queue"]
        )
        unacked = GaugeMetricFamily(
            "platform_celery_unacked_messages",
            "Messages the Redis broker has handed to workers that have not acknowledged them yet (running tasks).",
        )
        up = _source_up("broker")
        broker = str(settings.CELERY_BROKER_URL or "")
        try:
            if broker.startswith(("redis://", "rediss://")):
                counts, in_flight = redis_queue_lengths(redis_client(broker), platform_queues())
                unacked.add_metric([], in_flight)
                yield unacked
            elif broker.startswith("filesystem://"):
                options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
                counts = filesystem_queue_lengths(Path(options.get("data_folder_in", ".")), platform_queues())
            else:
                counts = {}
        except Exception:  # Redis down: this scrape says so rather than failing whole
            up.add_metric([], 0)
            yield up
            return
        for queue, count in sorted(counts.items()):
            length.add_metric([queue], count)
        up.add_metric([], 1)
        yield length
        yield up

    # -- executions ------------------------------------------------------------------------

    def _executions(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "platform_executions",
            "Executions (sandbox runs of verification) in the database, by status and sandbox backend.",
            labels=["status", "backend"],
        )
        up = _source_up("database")
        try:
            rows = execution_counts()
        except Exception:
            up.add_metric([], 0)
            yield up
            return
        for (status, backend), count in sorted(rows.items()):
            family.add_metric([status, backend], count)
        up.add_metric([], 1)
        yield family
        yield up

    # -- sandbox pools ---------------------------------------------------------------------

    def _pools(self) -> Iterator[Metric]:
        url = redis_url()
        if url is None:
            return  # embedded: no worker reports (docs/operations.md)
        from evaluation.sandbox.pool_reports import read_pool_reports

        up = _source_up("pool_reports")
        try:
            reports = read_pool_reports(redis_client(url))
        except Exception:
            up.add_metric([], 0)
            yield up
            return
        labels = ["host", "backend"]
        gauges = {
            "size": GaugeMetricFamily("platform_sandbox_pool_size", "Sandbox slots (runs at once).", labels=labels),
            "leased": GaugeMetricFamily("platform_sandbox_pool_leased", "Sandboxes running a job.", labels=labels),
            "idle": GaugeMetricFamily("platform_sandbox_pool_idle", "Warm sandboxes waiting.", labels=labels),
        }
        counters = {
            "started": CounterMetricFamily("platform_sandbox_pool_started", "Sandboxes started.", labels=labels),
            "recycled": CounterMetricFamily(
                "platform_sandbox_pool_recycled",
                "Sandboxes retired (after N runs, an anomaly, or to make room).",
                labels=labels,
            ),
        }
        # Every failed start, by why, and those of them retried where no caller saw them:
        # a worker's cold starts as well as its pools' (evaluation/sandbox/starts.py).
        start_labels = ["host", "backend", "reason"]
        start_failures = CounterMetricFamily(
            "platform_sandbox_start_failures",
            "Sandbox starts that failed (each attempt), by reason; retried ones included.",
            labels=start_labels,
        )
        start_retries = CounterMetricFamily(
            "platform_sandbox_start_retries",
            "Failed sandbox starts that were retried, unseen by the run that wanted the sandbox.",
            labels=start_labels,
        )
        processes = GaugeMetricFamily(
            "platform_sandbox_pool_processes", "Worker processes reporting a pool.", labels=labels
        )
        usable = GaugeMetricFamily(
            "platform_sandbox_backend_usable",
            "1 when every reporting process of the host can start sandboxes of the backend, else 0.",
            labels=labels,
        )
        age = GaugeMetricFamily(
            "platform_sandbox_pool_report_age_seconds", "Age of the host's oldest live report.", labels=labels
        )
        totals: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        starts: dict[str, dict[tuple[str, str, str], float]] = {"start_failures": defaultdict(float),
                                                               "start_retries": defaultdict(float)}  # fmt: skip
        now = time.time()
        for report in reports:
            key = (str(report["host"]), str(report["backend"]))
            for figure, counts in starts.items():
                by_reason = report.get(figure)
                for reason, count in by_reason.items() if isinstance(by_reason, dict) else ():
                    counts[(*key, str(reason))] += float(count or 0)
            entry = totals[key]
            for stat in ("size", "leased", "idle", "started", "recycled"):
                entry[stat] += float(report.get(stat, 0) or 0)
            entry["processes"] += 1
            entry["unusable"] += 1 if report.get("problem") else 0
            entry["age"] = max(entry["age"], now - float(report.get("at", now)))
        for key, entry in sorted(totals.items()):
            for stat, family in gauges.items():
                family.add_metric(list(key), entry[stat])
            for stat, family in counters.items():
                family.add_metric(list(key), entry[stat])
            processes.add_metric(list(key), entry["processes"])
            usable.add_metric(list(key), 0 if entry["unusable"] else 1)
            age.add_metric(list(key), max(0.0, entry["age"]))
        for figure, family in (("start_failures", start_failures), ("start_retries", start_retries)):
            for labels, count in sorted(starts[figure].items()):
                family.add_metric(list(labels), count)
        up.add_metric([], 1)
        yield from gauges.values()
        yield from counters.values()
        yield from (start_failures, start_retries, processes, usable, age, up)


def execution_counts() -> dict[tuple[str, str], int]:
    """{(status, backend): rows} over every execution, in one GROUP BY query. The backend
    is the one its verification was configured with (Verification.config["backend"])."""
    from django.db.models import Count
    from django.db.models.fields.json import KeyTextTransform

    from evaluation.models import Execution

    rows = (
        Execution.objects.order_by()  # no Meta.ordering: it would join the GROUP BY
        .values("status", backend=KeyTextTransform("backend", "verification__config"))
        .annotate(rows=Count("id"))
    )
    return {(row["status"], row["backend"] or "unknown"): row["rows"] for row in rows}


_scrape_registry = CollectorRegistry(auto_describe=False)
_scrape_registry.register(ScrapeTimeCollector())


def render() -> bytes:
    """The whole exposition: request metrics (every web process's, in multiprocess mode)
    followed by the scrape-time figures. The two share no metric names, so their texts
    can simply be joined."""
    directory = multiprocess_dir()
    if directory:
        requests = CollectorRegistry()
        MultiProcessCollector(requests, path=directory)
    else:
        requests = _request_registry
    return generate_latest(requests) + generate_latest(_scrape_registry)


# Anything else is counted as "other": a label value per made-up method would be unbounded.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_request(*, method: str, route: str, status: int, seconds: float) -> None:
    method = method if method in _METHODS else "other"
    HTTP_REQUESTS.labels(method, route, f"{status // 100}xx").inc()
    HTTP_LATENCY.labels(method, route).observe(seconds)
