"""The compile cache of one host: what a compile of a source made, kept under
SHA-256(language, toolchain fingerprint, source), on disk under
$COMPILE_CACHE_DIR (default var/compile-cache/) and in memory for the last few.

An entry is JSON: {"status": "ok", "artifacts": {name: base64}, "compile_s": ...}
or {"status": "compile_error", "message": ...}. It is written to a temporary file
and renamed into place, so a reader sees a whole entry or none; two workers that
compile the same source at once both write the same entry, and either wins.
Nothing in an entry is trusted for a verdict beyond being the program to run: the
artifacts run in a sandbox like any solution.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from evaluation.sandbox.types import RunResult, Status

ROOT = Path(__file__).resolve().parent.parent.parent
MEMORY_ENTRIES = 64
_memory: collections.OrderedDict[str, dict[str, Any]] = collections.OrderedDict()
_lock = threading.Lock()
hits = {"memory": 0, "disk": 0, "miss": 0}  # for the benchmark and the logs


def directory() -> Path:
    configured = os.environ.get("COMPILE_CACHE_DIR", "")
    if configured:
        return Path(configured)
    return Path(os.environ.get("PLATFORM_VAR_DIR", "") or str(ROOT / "var")) / "compile-cache"


def key(language: str, fingerprint: str, source: bytes) -> str:
    digest = hashlib.sha256()
    for part in (language.encode(), fingerprint.encode(), source):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def _path(cache_key: str) -> Path:
    return directory() / cache_key[:2] / f"{cache_key}.json"


def get(cache_key: str) -> dict[str, Any] | None:
    with _lock:
        if cache_key in _memory:
            _memory.move_to_end(cache_key)
            hits["memory"] += 1
            return _memory[cache_key]
    try:
        entry = json.loads(_path(cache_key).read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        hits["miss"] += 1
        return None
    except (OSError, ValueError):  # a damaged entry is a miss: it is compiled again and rewritten
        hits["miss"] += 1
        return None
    if not isinstance(entry, dict) or entry.get("status") not in ("ok", "compile_error"):
        hits["miss"] += 1
        return None
    hits["disk"] += 1
    _remember(cache_key, entry)
    return entry


def put(cache_key: str, entry: dict[str, Any]) -> None:
    _remember(cache_key, entry)
    path = _path(cache_key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
        with os.fdopen(handle, "w") as out:
            json.dump(entry, out)
        os.replace(staging, path)
    except OSError:
        pass  # a cache that cannot be written costs a compile next time, never a run


def _remember(cache_key: str, entry: dict[str, Any]) -> None:
    with _lock:
        _memory[cache_key] = entry
        _memory.move_to_end(cache_key)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)


def forget_memory() -> None:
    """Drop the in-memory entries (the benchmark's cold path; tests)."""
    with _lock:
        _memory.clear()


def entry_from(result: RunResult) -> dict[str, Any]:
    """The cache entry a finished compile run makes."""
    data = result.data or {}
    if result.status == Status.PASSED and isinstance(data.get("artifacts"), dict):
        return {"status": "ok", "artifacts": data["artifacts"], "compile_s": data.get("compile_s"),
                "compiler_output": str(data.get("compiler_output") or "")[-8000:]}  # fmt: skip
    message = result.message or result.stderr or f"the compile ended {result.status}"
    return {"status": "compile_error", "message": message[-8000:]}
