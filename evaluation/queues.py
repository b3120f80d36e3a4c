"""How many messages wait in a broker queue, asked of the broker itself."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def queued_messages(queue: str) -> int | None:
    """Messages waiting in `queue` (all priority levels; not those a worker holds
    unacknowledged), or None when the broker cannot tell. A passive declare: it never
    creates the queue, and it works on every kombu transport that keeps a count."""
    from celery import current_app
    from kombu.exceptions import ChannelError

    try:
        with current_app.connection_for_read() as connection:
            return int(connection.default_channel.queue_declare(queue=queue, passive=True).message_count)
    except ChannelError as exc:
        if getattr(exc, "code", None) == 404 or "NOT_FOUND" in str(exc):
            return 0  # no one declared it (a broker that came back empty): it holds nothing
        log.warning("could not count the messages in queue %s: %s", queue, exc)
        return None
    except Exception as exc:  # an unknown count must never read as an empty queue
        log.warning("could not count the messages in queue %s: %s", queue, exc)
        return None
