"""Shared by the operations tests: the tests' Redis broker database as the platform's
broker (TEST_REDIS_DB, emptied before and after by the `broker` fixture), and a reader
for the Prometheus text format."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families


@pytest.fixture
def redis_broker(broker: Any, settings: Any) -> str:
    """The Redis URL that this process's settings (and Celery producer) now use as broker."""
    from tests.evaluation.workers import REDIS_URL

    settings.CELERY_BROKER_URL = REDIS_URL
    return REDIS_URL


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local TCP port that refuses connections: bound, so nothing else can take it
    during the test, but never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(parsed: dict, name: str, **labels: str) -> float | None:
    return parsed.get((name, tuple(sorted(labels.items()))))


def family_names(text: str) -> dict[str, set[str]]:
    """{family name: its label names} (histogram bucket `le` left out)."""
    names: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        labels = names.setdefault(family.name, set())
        for s in family.samples:
            labels.update(k for k in s.labels if k != "le")
    return names
