"""The embedded broker's transport (config/kombu_internals.py FilesystemTransport): a consumer never
takes a message that is still being written, and a file that is not a message is
left out, not the death of the worker.

Both ran `make run`'s worker into `JSONDecodeError` and out of the platform: kombu's
own channel creates a message's file under its final name and writes it afterwards,
and a consumer that lists the folder in between reads an empty message. The test
puts the consumer exactly there: in the middle of the publisher's first write to
the queue folder.
"""

from __future__ import annotations

import builtins
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from config.kombu_internals import FilesystemTransport as Transport

QUEUE = "sandbox"


def _options(folder: Path) -> dict[str, Any]:
    for name in ("queue", "control"):
        (folder / name).mkdir(exist_ok=True)
    return {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder), "control_folder": str(folder / "control"),
            "store_processed": False}  # fmt: skip


def _channel(folder: Path, transport: Any) -> Any:
    return Connection("filesystem://", transport=transport, transport_options=_options(folder)).channel()


def test_a_consumer_looking_while_a_message_is_written_takes_nothing_then_the_whole_message(tmp_path, monkeypatch):
    publisher, consumer = _channel(tmp_path, Transport), _channel(tmp_path, Transport)
    queue_folder = str(tmp_path / "queue")
    real_open = builtins.open
    seen_mid_write: list[Any] = []

    def open_and_look(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        if "w" in mode and str(file).startswith(queue_folder) and not seen_mid_write:
            try:  # the consumer looks now: the file exists, nothing is written yet
                seen_mid_write.append(consumer._get(QUEUE))
            except Exception as exc:
                seen_mid_write.append(exc)
        return handle

    monkeypatch.setattr(builtins, "open", open_and_look)
    publisher._put(QUEUE, {"body": "hello", "headers": {}, "properties": {}})
    monkeypatch.setattr(builtins, "open", real_open)

    assert len(seen_mid_write) == 1
    assert type(seen_mid_write[0]).__name__ == "Empty", seen_mid_write  # not a broken message, not an error
    assert consumer._get(QUEUE)["body"] == "hello"  # once written, the whole message
    assert [name for name in os.listdir(queue_folder)] == []  # no temporary file left behind


def test_a_file_that_is_not_a_message_is_left_out_and_the_next_message_delivered(tmp_path, caplog):
    publisher, consumer = _channel(tmp_path, Transport), _channel(tmp_path, Transport)
    queue_folder = tmp_path / "queue"
    # Named as if published at clock 0 and 1 ms: ahead of any message in the queue's order.
    (queue_folder / f"{0:015d}_empty.{QUEUE}.msg").write_bytes(b"")
    (queue_folder / f"{1:015d}_junk.{QUEUE}.msg").write_bytes(b"{not json")
    publisher._put(QUEUE, {"body": "after", "headers": {}, "properties": {}})

    with caplog.at_level(logging.ERROR, logger="config.filesystem_broker"):
        assert consumer._get(QUEUE)["body"] == "after"
    assert sum("was not a message" in r.getMessage() for r in caplog.records) == 2
    with pytest.raises(Exception) as nothing:
        consumer._get(QUEUE)
    assert type(nothing.value).__name__ == "Empty"


def test_messages_are_taken_in_the_order_they_were_sent_whatever_the_clocks_digits(tmp_path, monkeypatch):
    """kombu names a message by the milliseconds of a monotonic clock: unpadded, one sent
    at 9,999,999 ms sorted after one sent at 10,000,000 ms, and consumers take the
    smallest name first."""
    import config.kombu_internals as broker

    publisher, consumer = _channel(tmp_path, Transport), _channel(tmp_path, Transport)
    for clock_s, body in ((9_999.999, "first"), (10_000.0, "second")):
        monkeypatch.setattr(broker, "monotonic", lambda clock_s=clock_s: clock_s)
        publisher._put(QUEUE, {"body": body, "headers": {}, "properties": {}})
    assert [consumer._get(QUEUE)["body"] for _ in range(2)] == ["first", "second"]


def test_the_embedded_settings_choose_this_transport():
    from django.conf import settings

    if not str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        pytest.fail("this test reads the test run's own (embedded) settings: run it without CELERY_BROKER_URL")
    assert settings.CELERY_BROKER_TRANSPORT == "config.kombu_internals:FilesystemTransport"
