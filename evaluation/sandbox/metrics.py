"""Counters by backend and status, and one structured log line per execution."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from typing import Any

log = logging.getLogger("evaluation.runs")
_counts: Counter[tuple[str, str]] = Counter()
_anomalies: Counter[tuple[str, str]] = Counter()
_lock = threading.Lock()


def record_execution(line: dict[str, Any]) -> None:
    with _lock:
        _counts[(line["backend"], line["status"])] += 1
        if line.get("anomaly"):
            _anomalies[(line["backend"], line["anomaly"])] += 1
    if log.isEnabledFor(logging.INFO):  # the line costs a JSON encoding: only when it is kept
        log.info(json.dumps(line, sort_keys=True, default=str))


def snapshot() -> dict[str, Any]:
    with _lock:
        return {
            "executions": {f"{b}:{s}": n for (b, s), n in sorted(_counts.items())},
            "anomalies": {f"{b}:{a}": n for (b, a), n in sorted(_anomalies.items())},
        }


def reset() -> None:
    with _lock:
        _counts.clear()
        _anomalies.clear()
