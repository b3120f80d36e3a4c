"""The Redis broker transport, less one redis-py client a message.

kombu's Redis channel builds a new `redis.Redis` for every message it publishes,
every message it delivers (its bookkeeping of unacknowledged messages) and every
ack. With redis-py 8 each costs ~0.3 ms of Python (a table of ~170 response
callbacks filled in): a reward chunk paid it three times over, and py-spy found
it under a fifth of a reward worker's Python samples. (Measured whole, a publish
costs the web ~0.3 ms less CPU and a worker ~3% less a completion.) A client
holds no connection of its own: it checks
one out of the channel's pool for each command or pipeline, and redis-py's
clients are safe to share between threads. So one client a pool does the same
work. settings.py selects this transport for `redis://` brokers.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _shared_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the event loop's own client (BRPOP): one a channel already
            return super()._create_client(asynchronous=True)
        client, pool = self._shared_client, self.pool
        if client is None or client.connection_pool is not pool:  # a new pool after a fork or a reconnect
            client = self._shared_client = super()._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
