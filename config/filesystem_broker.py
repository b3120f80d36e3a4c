"""The embedded filesystem broker's transport (kombu's), with messages that appear whole.

kombu's filesystem channel publishes a message by creating its file under the
name consumers look for, then writing it; a consumer lists the folder, moves the
file away and reads it. A consumer that lists between the two reads an empty
message, and the worker dies of the JSON error: `make run` stopped with it, and
polling the folder every 10 ms (settings.py) made the window one a busy machine
hits. Here a message is written under a name no consumer takes (a leading dot:
kombu matches the text after the first dot against `<queue>.msg`, and so does
evaluation/queues.py), then renamed into place, which is atomic within a folder.

A file that is still not a message (a disk that filled up, a hand-made file) is
logged and left out of the queue rather than killing the worker.
settings.py selects this transport for `filesystem://` brokers.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem as kombu_filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

log = logging.getLogger(__name__)
# Unreadable files passed over in one look, before the look gives up (finds nothing).
UNREADABLE_SKIPPED_AT_ONCE = 100


class Channel(kombu_filesystem.Channel):
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


class Transport(kombu_filesystem.Transport):
    Channel = Channel
