"""The Celery application. Configuration comes from Django settings (CELERY_*).

Workers that take sandbox work also publish their sandbox pools' stats to Redis
(evaluation/sandbox/pool_reports.py), which the web's /metrics and /healthz read; and
with LOG_FORMAT=json their log lines are JSON like the web's (config/ops/logs.py).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("taskplatform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Queues whose tasks run in sandboxes ("rewards" exists on the filesystem broker only).
SANDBOX_QUEUES = frozenset({"sandbox", "rewards"})
_reporter: Any = None


def _runs_sandboxes() -> bool:
    consumed = app.amqp.queues.consume_from
    return not consumed or bool(SANDBOX_QUEUES & set(consumed))


def _start_pool_reporter(host: str) -> None:
    """Where tasks run (a prefork child, or the main process of a threads/solo worker)."""
    global _reporter
    broker = str(app.conf.broker_url or "")
    if _reporter is not None or not broker.startswith(("redis://", "rediss://")) or not _runs_sandboxes():
        return  # the filesystem broker has no Redis to report to: embedded mode reads its pool directly
    from evaluation.sandbox.pool_reports import PoolReporter

    _reporter = PoolReporter(broker, host).start()


@signals.worker_process_init.connect
def _child_reports(sender: Any = None, **_: Any) -> None:
    _start_pool_reporter(str(sender or "worker"))


@signals.worker_ready.connect
def _main_reports(sender: Any = None, **_: Any) -> None:
    from celery.concurrency.prefork import TaskPool as PreforkPool

    controller = getattr(sender, "controller", None)
    pool_cls = getattr(controller, "pool_cls", None)
    # Under prefork the pools live in the children, which report themselves; starting a
    # thread here would also put a thread into every child forked later.
    if isinstance(pool_cls, type) and issubclass(pool_cls, PreforkPool):
        return
    _start_pool_reporter(str(getattr(sender, "hostname", "") or "worker"))


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _stop_reporting(**_: Any) -> None:
    global _reporter
    reporter, _reporter = _reporter, None
    if reporter is not None:
        reporter.stop()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _json_worker_logs(logger: logging.Logger | None = None, **_: Any) -> None:
    """Celery installs its own handlers on the root and task loggers; with
    LOG_FORMAT=json give them the JSON formatter, so a worker logs like the web."""
    from django.conf import settings

    if logger is None or getattr(settings, "LOG_FORMAT", "plain") != "json":
        return
    from config.ops.logs import JsonFormatter

    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
