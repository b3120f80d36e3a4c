"""Snapshot export records, one per task version, in the shape docs/export.md gives
(with its JSON Schema): loadable by Hugging Face `datasets` as it is.

Records are built from the snapshot's members a chunk at a time, so an export
holds one chunk in memory whatever the snapshot's size.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

from trainer_bridge.models import Snapshot

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Answer with one complete Python solution in a single ```python fenced block."
)
CHUNK = 500


def _user_prompt(version: Any) -> str:
    parts = [version.statement.strip()]
    if version.suite_kind == "stdio":
        parts.append("Read from standard input and write to standard output.")
    elif version.entry_point:
        parts.append(f"Define `{version.entry_point}`.")
    if version.starter_code.strip():
        parts.append(f"```python\n{version.starter_code.rstrip()}\n```")
    return "\n\n".join(parts)


def records(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[dict[str, Any]]:
    """The snapshot's records in its order. `tests` always holds the setup and the
    visible tests; `hidden` only when `with_hidden_tests` (the export:tests scope)."""
    members = snapshot.members.select_related("task", "version").order_by("position")
    for member in members.iterator(chunk_size=CHUNK):
        version = member.version
        tests = {"setup": version.test_setup, "visible": list(version.visible_tests)}
        if with_hidden_tests:
            tests["hidden"] = list(version.hidden_tests)
        yield {
            "task_id": member.task.slug,
            "version": version.number,
            "version_hash": member.content_hash,
            "snapshot": snapshot.hash,
            "prompt": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": _user_prompt(version)},
            ],
            "suite_kind": version.suite_kind,
            "entry_point": version.entry_point,
            "difficulty": member.difficulty,
            "difficulty_source": member.difficulty_source or None,
            "band": member.band or None,
            "reward_noise": member.reward_noise,
            "tags": list(member.tags),
            "limits": {"time_limit_s": float(version.time_limit_s), "memory_limit_mb": int(version.memory_limit_mb)},
            "tests": tests,
        }


def jsonl_chunks(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[bytes]:
    batch: list[str] = []
    for record in records(snapshot, with_hidden_tests=with_hidden_tests):
        batch.append(json.dumps(record, ensure_ascii=False))
        if len(batch) >= CHUNK:
            yield ("\n".join(batch) + "\n").encode()
            batch = []
    if batch:
        yield ("\n".join(batch) + "\n").encode()


def json_chunks(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[bytes]:
    """One JSON array, written as it goes."""
    yield b"["
    first = True
    for record in records(snapshot, with_hidden_tests=with_hidden_tests):
        yield (b"" if first else b",") + json.dumps(record, ensure_ascii=False).encode()
        first = False
    yield b"]"


def gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()
