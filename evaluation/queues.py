"""How many messages wait in the broker's queues: for the reaper, which must tell a
backlog from a loss, and for /metrics (config/ops/prometheus.py). Read from the broker's
own storage, for the two brokers the platform runs on (Redis, kombu's filesystem one)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# kombu's Redis transport keeps a queue's messages of priority p in "<queue>\x06\x16<p>"
# (p rounded down to a step; priority 0 in "<queue>" itself): a queue's length is their sum.
KOMBU_PRIORITY_SEPARATOR = "\x06\x16"
KOMBU_PRIORITY_STEPS = (0, 3, 6, 9)


def redis_queue_lengths(client: Any, queues: list[str]) -> tuple[dict[str, int], int]:
    """({queue: messages waiting, all priorities}, messages delivered but unacknowledged),
    in one round trip. A queue no one declared (a broker that came back empty) holds 0."""
    pipe = client.pipeline(transaction=False)
    keys = []
    for queue in queues:
        for step in KOMBU_PRIORITY_STEPS:
            keys.append(queue)
            pipe.llen(f"{queue}{KOMBU_PRIORITY_SEPARATOR}{step}" if step else queue)
    pipe.hlen("unacked")  # kombu's hash of delivered, unacknowledged messages
    *lengths, unacked = pipe.execute()
    counts = dict.fromkeys(queues, 0)
    for queue, count in zip(keys, lengths, strict=True):
        counts[queue] += int(count)
    return counts, int(unacked)


def filesystem_queue_lengths(folder: Path, queues: list[str]) -> dict[str, int]:
    """kombu's filesystem transport keeps one file per message, named `<time>_<id>.<queue>.msg`."""
    counts = dict.fromkeys(queues, 0)
    suffixes = {f".{queue}.msg": queue for queue in queues}
    with os.scandir(folder) as entries:
        for entry in entries:
            _, _, rest = entry.name.partition(".")
            queue = suffixes.get(f".{rest}")
            if queue is not None:
                counts[queue] += 1
    return counts


def queued_messages(queue: str) -> int | None:
    """Messages waiting in `queue` on this process's broker (not those a worker holds
    unacknowledged), or None when it cannot tell: an unknown count must never read as
    an empty queue."""
    from celery import current_app

    broker = str(current_app.conf.broker_url or "")
    try:
        if broker.startswith(("redis://", "rediss://")):
            import redis

            client = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
            try:
                return redis_queue_lengths(client, [queue])[0][queue]
            finally:
                client.close()
        if broker.startswith("filesystem://"):
            options = current_app.conf.broker_transport_options or {}
            return filesystem_queue_lengths(Path(options.get("data_folder_in", ".")), [queue])[queue]
    except Exception as exc:
        log.warning("could not count the messages in queue %s: %s", queue, exc)
        return None
    log.warning("cannot count queued messages on broker %s", broker.partition("://")[0])
    return None


# -- work a verification chunk gives way to -----------------------------------------------------------

# Reward chunks go ahead of verification (a training step waits on them): with Redis as
# the sandbox queue's priority-0 messages, kept in the list named for the queue itself;
# on the filesystem broker, which has no priorities, in a queue of their own
# (trainer_bridge.tasks.reward_queue). A chunk of executions asks this before each run.
FILESYSTEM_URGENT_QUEUE = "rewards"
REDIS_URGENT_KEY = "sandbox"
URGENT_LOOK_EVERY_S = 0.05

_urgent_lock = threading.Lock()
_urgent_seen: tuple[float, bool] = (-1.0, False)
_urgent_client: Any = None


def urgent_work_waiting() -> bool:
    """Whether a reward chunk waits in the broker. Looked up at most every
    URGENT_LOOK_EVERY_S a process (a folder listing or one LLEN); False when it
    cannot tell, so a broken look never stalls verification."""
    global _urgent_seen
    now = time.monotonic()
    with _urgent_lock:
        seen_at, waiting = _urgent_seen
        if now - seen_at < URGENT_LOOK_EVERY_S:
            return waiting
        _urgent_seen = (now, waiting)  # others reuse it while this thread looks
    waiting = _urgent_lookup()
    with _urgent_lock:
        _urgent_seen = (time.monotonic(), waiting)
    return waiting


def _urgent_lookup() -> bool:
    global _urgent_client
    from celery import current_app

    broker = str(current_app.conf.broker_url or "")
    try:
        if broker.startswith("filesystem://"):
            options = current_app.conf.broker_transport_options or {}
            folder = Path(options.get("data_folder_in", "."))
            return filesystem_queue_lengths(folder, [FILESYSTEM_URGENT_QUEUE])[FILESYSTEM_URGENT_QUEUE] > 0
        if broker.startswith(("redis://", "rediss://")):
            if _urgent_client is None:
                import redis

                _urgent_client = redis.Redis.from_url(broker, socket_timeout=2, socket_connect_timeout=2)
            return int(_urgent_client.llen(REDIS_URGENT_KEY)) > 0
    except Exception as exc:
        log.warning("could not tell whether reward work waits: %s", exc)
    return False
