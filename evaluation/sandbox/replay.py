"""Every executed request, kept by its digest, so any logged run can be run again.

The log line of an execution names its `request_digest`; the request itself
(solution, tests, limits, seed, repeat) is written once under that digest, and
`manage.py replay DIGEST` (evaluation/management/commands/replay.py) runs it
again and prints the result beside what the runtime fingerprint and harness
version must match. This module only keeps and loads requests: the engine imports
it to keep each one, so it never imports the engine.

Where: SANDBOX_REPLAY_DIR (default: var/replay in the checkout, or under
PLATFORM_VAR_DIR); set it to `off` to keep nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from evaluation.sandbox.types import Limits, RunRequest

ROOT = Path(__file__).resolve().parent.parent.parent


def replay_dir() -> Path | None:
    return _replay_dir(os.environ.get("SANDBOX_REPLAY_DIR", ""), os.environ.get("PLATFORM_VAR_DIR", ""))


@functools.lru_cache(maxsize=8)
def _replay_dir(configured: str, var_dir: str) -> Path | None:
    # Cached by the settings it reads: every execution asks, and building the Path
    # cost more than the rest of keeping a request already kept.
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    return Path(var_dir or str(ROOT / "var")) / "replay"


def request_body(request: RunRequest) -> dict[str, Any]:
    """Everything that determines a run's outcome (the runtime aside)."""
    return {
        "kind": request.suite_kind,
        "entry_point": request.entry_point,
        "solution": request.solution,
        "tests": request.tests,
        "limits": request.limits.as_dict(),
        "seed": request.seed,
        "repeat": request.repeat,
        # Only where it is not Python: every earlier request keeps its digest.
        **({"language": request.language} if request.language != "python" else {}),
    }


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True).encode()


def digest_of(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(body)).hexdigest()


def _path(directory: Path, digest: str) -> Path:
    return directory / digest[:2] / f"{digest}.json"


def store(body: dict[str, Any], digest: str) -> Path | None:
    """Keep the request under its digest (once: the same request is the same file).
    A failure to write is logged by the caller's log line, never a failed run."""
    directory = replay_dir()
    if directory is None:
        return None
    path = _path(directory, digest)
    if os.path.exists(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(canonical(body))
        os.replace(staging, path)  # whole or not at all
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return path


class NotRecorded(LookupError):
    pass


def load(digest: str) -> RunRequest:
    """The request recorded under `digest`, checked against it."""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise NotRecorded(f"{digest!r} is not a request digest (64 lowercase hex digits)")
    directory = replay_dir()
    if directory is None:
        raise NotRecorded("SANDBOX_REPLAY_DIR is off: no requests are kept")
    path = _path(directory, digest)
    try:
        body = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise NotRecorded(f"no request {digest} under {directory}") from None
    if digest_of(body) != digest:
        raise NotRecorded(f"{path} does not hash to its name: it was altered")
    return RunRequest(
        suite_kind=body["kind"],
        solution=body["solution"],
        tests=body["tests"],
        entry_point=body["entry_point"],
        limits=Limits(**body["limits"]),
        seed=int(body["seed"]),
        repeat=int(body["repeat"]),
        language=str(body.get("language") or "python"),
    )
