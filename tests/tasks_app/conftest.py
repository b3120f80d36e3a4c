"""Fixtures for the importer and command suites."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tasks_app.models import Task, TaskVersion


def humaneval_dataset_path() -> Path:
    # CI clones the project next to a copy of shared/, as in development.
    return Path(settings.BASE_DIR).parent / "shared" / "datasets" / "HumanEval.jsonl.gz"


@pytest.fixture(scope="session")
def humaneval_gz() -> bytes:
    path = humaneval_dataset_path()
    if not path.exists():
        pytest.fail(f"The HumanEval data set is missing: expected it at {path}")
    return path.read_bytes()


@pytest.fixture(scope="session")
def humaneval_path() -> Path:
    return humaneval_dataset_path()


@pytest.fixture(scope="session")
def humaneval_rows(humaneval_gz: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(humaneval_gz).decode().splitlines() if line.strip()]


def jsonl(*rows: Any) -> bytes:
    """JSONL bytes; a row that is already bytes or str goes in as written."""
    lines = []
    for row in rows:
        if isinstance(row, bytes):
            lines.append(row)
        elif isinstance(row, str):
            lines.append(row.encode())
        else:
            lines.append(json.dumps(row).encode())
    return b"\n".join(lines) + b"\n"


@pytest.fixture
def make_jsonl() -> Callable[..., bytes]:
    return jsonl


@pytest.fixture
def row_counts(db: Any) -> Callable[[], tuple[int, int]]:
    """row_counts() -> (tasks, versions): compare before and after to prove nothing was written."""
    return lambda: (Task.objects.count(), TaskVersion.objects.count())
