"""Waking a request that waits for its reward batch as soon as a worker writes
verdicts, instead of polling the database on a timer.

With a Redis broker (every deployment but the embedded one), a worker pushes a
token onto the batch's list after it writes a chunk's verdicts, and the waiting
request blocks on that list (BLPOP) between looks at the database. Without
Redis, or if Redis fails, the request sleeps a little between looks instead:
the database stays the only source of truth either way, so a lost wake-up
costs a moment, never a verdict.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)
KEY = "taskplatform:reward-batch:{}"
EXPIRE_S = 300
_client: Any = None
_client_lock = threading.Lock()


def _redis() -> Any:
    global _client
    url = getattr(settings, "CELERY_BROKER_URL", "") or ""
    if not url.startswith(("redis://", "rediss://")):
        return None
    with _client_lock:
        if _client is None:
            import redis

            _client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        return _client


def notify(batch_id: Any) -> None:
    """Wake whoever waits for this batch (a no-op without Redis)."""
    client = _redis()
    if client is None:
        return
    key = KEY.format(batch_id)
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.rpush(key, b"1").expire(key, EXPIRE_S).execute()
    except Exception as exc:  # a wake-up is an optimisation: the waiter looks at the database anyway
        log.warning("could not wake the waiter of reward batch %s: %s", batch_id, exc)


def wait(batch_id: Any, *, seconds: float, fallback_s: float) -> None:
    """Block until this batch is notified or `seconds` pass; without Redis, sleep `fallback_s`."""
    client = _redis()
    if client is None or seconds <= 0:
        time.sleep(max(0.0, min(seconds, fallback_s)))
        return
    try:
        # BLPOP takes whole seconds on old servers; Redis 6+ takes a float.
        client.blpop([KEY.format(batch_id)], timeout=max(0.01, min(seconds, 1.0)))
    except Exception as exc:
        log.warning("waiting on reward batch %s through Redis failed (%s); polling instead", batch_id, exc)
        time.sleep(max(0.0, min(seconds, fallback_s)))
