"""The Redis broker transport (config/kombu_internals.py RedisTransport): kombu's, with one redis-py client
a pool instead of one a message, on a real Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from kombu import Connection, Queue

from tests.evaluation.workers import REDIS_DB, REDIS_URL, flush_broker


@pytest.fixture
def clean_redis() -> Any:
    flush_broker()
    yield redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    flush_broker()


def _round_trip(transport: str, count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], int]:
    """Publish `count` messages, consume and ack them all; returns what came back and
    how many redis-py clients were built on the way."""
    built = []
    original = redis.Redis.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counting)
    received: list[int] = []

    def on_message(body: Any, message: Any) -> None:
        received.append(body["n"])
        message.ack()

    queue = Queue("broker-test", routing_key="broker-test")
    with Connection(REDIS_URL, transport=transport) as connection:
        producer = connection.Producer()
        for n in range(count):
            producer.publish({"n": n}, routing_key="broker-test", declare=[queue], serializer="json")
        with connection.Consumer(queue, callbacks=[on_message]):
            while len(received) < count:
                connection.drain_events(timeout=5)
    monkeypatch.undo()
    return received, len(built)


def test_messages_flow_and_are_acked_with_one_client_a_pool(clean_redis, monkeypatch):
    received, built = _round_trip("config.kombu_internals:RedisTransport", 30, monkeypatch)
    assert received == list(range(30))
    assert built <= 4  # the publishing pool's, the consumer's event loop's, a spare: not one a message
    # Every message acked: kombu's bookkeeping of unacknowledged ones is empty.
    assert clean_redis.hlen("unacked") == 0
    assert clean_redis.zcard("unacked_index") == 0
    assert clean_redis.llen("broker-test") == 0


def test_kombus_own_transport_builds_a_client_a_message(clean_redis, monkeypatch):
    """What RedisTransport (config/kombu_internals.py) is for (if kombu stops doing this, it can go)."""
    received, built = _round_trip("redis", 30, monkeypatch)
    assert received == list(range(30))
    assert built >= 60
