"""Counters of this process's sandbox runs, by backend and status (anomalies, failed
sandbox starts and their retries too), and the log line of each execution and each
failed start: what the engine and the start path record, and what the workers' pool
reports carry to /metrics (evaluation/sandbox/pool_reports.py).

Nothing here imports the rest of the sandbox package, so the engine and the start
path can record into it without a cycle."""

from __future__ import annotations

import json
import logging
import threading
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


def start_failure_backends() -> set[str]:
    """The backends with a failed sandbox start counted in this process."""
    with _lock:
        return {backend for backend, _reason in _start_failures}


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
