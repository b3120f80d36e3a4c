"""The two broker transports the platform runs on, as subclasses of kombu's: what
relies on kombu's internals (private channel methods and attributes), in one place.

- RedisTransport: kombu's Redis transport, less one redis-py client a message.
- FilesystemTransport: kombu's filesystem transport (the embedded `make run`
  broker), with messages that appear whole.

settings.py selects them by path (CELERY_BROKER_TRANSPORT): RedisTransport for
`redis://` brokers, FilesystemTransport for `filesystem://` ones.

These override or call methods kombu does not promise to keep. WRITTEN_AGAINST_KOMBU
is the kombu they were checked against; tests/config/test_kombu_internals.py fails
when the pin in requirements.txt or the installed kombu differs, and checks that
what is overridden or called still exists with the signature used here. When kombu
is upgraded, re-read those internals in the new kombu before moving the version on.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

WRITTEN_AGAINST_KOMBU = "5.7.0"

# -- Redis ------------------------------------------------------------------------------------
#
# kombu's Redis channel builds a new `redis.Redis` for every message it publishes,
# every message it delivers (its bookkeeping of unacknowledged messages) and every
# ack. With redis-py 8 each costs ~0.3 ms of Python (a table of ~170 response
# callbacks filled in): a reward chunk paid it three times over, and py-spy found
# it under a fifth of a reward worker's Python samples. (Measured whole, a publish
# costs the web ~0.3 ms less CPU and a worker ~3% less a completion.) A client
# holds no connection of its own: it checks one out of the channel's pool for each
# command or pipeline, and redis-py's clients are safe to share between threads.
# So one client a pool does the same work.


class RedisChannel(kombu_redis.Channel):
    _shared_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the event loop's own client (BRPOP): one a channel already
            return super()._create_client(asynchronous=True)
        client, pool = self._shared_client, self.pool
        if client is None or client.connection_pool is not pool:  # a new pool after a fork or a reconnect
            client = self._shared_client = super()._create_client()
        return client


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


# -- Filesystem ---------------------------------------------------------------------------------
#
# kombu's filesystem channel publishes a message by creating its file under the
# name consumers look for, then writing it; a consumer lists the folder, moves the
# file away and reads it. A consumer that lists between the two reads an empty
# message, and the worker dies of the JSON error: `make run` stopped with it, and
# polling the folder every 10 ms (settings.py) made the window one a busy machine
# hits. Here a message is written under a name no consumer takes (a leading dot:
# kombu matches the text after the first dot against `<queue>.msg`, and so does
# evaluation/queues.py), then renamed into place, which is atomic within a folder.
#
# A file that is still not a message (a disk that filled up, a hand-made file) is
# logged and left out of the queue rather than killing the worker.

# The name of the module this transport lived in before, kept as its logger's: what
# picks its records out by logger name (a log filter, tests/config/test_filesystem_broker.py)
# still finds them.
log = logging.getLogger("config.filesystem_broker")
# Unreadable files passed over in one look, before the look gives up (finds nothing).
UNREADABLE_SKIPPED_AT_ONCE = 100


class FilesystemChannel(kombu_filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        """Write the message beside the queue under a hidden name, then rename it into
        the queue: consumers see it whole or not at all. Named as kombu names it
        (milliseconds, then a unique id), but with the milliseconds zero-padded:
        consumers take files in the order of their names, and kombu's unpadded
        counter put 10000000_ (the clock 2.8 hours on) before 9999999_."""
        body = str_to_bytes(dumps(payload))
        name = f"{round(monotonic() * 1000):015d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as out:
                out.write(body)
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str) -> Any:
        for _ in range(UNREADABLE_SKIPPED_AT_ONCE):
            try:
                return super()._get(queue)
            except ValueError as exc:  # not JSON: kombu has already taken the file out of the queue
                log.error("a file in queue %s was not a message and was left out: %s", queue, exc)
        raise kombu_filesystem.Empty()


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel
