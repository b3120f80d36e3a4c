"""What the session host needs of a repository version: its environment (the tree's
files and setup commands) and its verdict (the tests, hidden files, protected paths)."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from evaluation.sandbox.bwrap import sandbox_python
from evaluation.sandbox.sessions.environments import environment_digest
from tasks_app.errors import ValidationFailed
from tasks_app.models import Blob, TaskVersion

REPOSITORY_KIND = "repository"


def repository_of(version: TaskVersion) -> dict[str, Any]:
    if version.suite_kind != REPOSITORY_KIND or not version.repository:
        raise ValidationFailed(
            f"version {version.content_hash[:12]} is a {version.suite_kind} task: sessions need a repository task",
            details={"version_hash": ["Choose a version of a repository task."]},
        )
    return version.repository


def digest_of(version: TaskVersion) -> str:
    """The environment's cache key, from the manifest alone (no blob is read)."""
    repository = repository_of(version)
    entries = [(path, entry["sha256"], bool(entry["executable"])) for path, entry in repository["manifest"].items()]
    return environment_digest(entries, repository["setup_commands"], sandbox_python())


def environment_files(version: TaskVersion, *, only: Iterable[str] | None = None) -> dict[str, tuple[bytes, bool]]:
    """The tree: path -> (bytes, executable), the bytes read from their blobs once each;
    with `only`, just those of its paths that the tree holds."""
    manifest = repository_of(version)["manifest"]
    if only is not None:
        manifest = {path: manifest[path] for path in only if path in manifest}
    blobs = {
        blob.sha256: bytes(blob.data)
        for blob in Blob.objects.filter(sha256__in={e["sha256"] for e in manifest.values()})
    }
    return {path: (blobs[entry["sha256"]], bool(entry["executable"])) for path, entry in manifest.items()}


def environment_body(version: TaskVersion) -> dict[str, Any]:
    """The files (base64) and setup commands, for the host's POST /environments."""
    repository = repository_of(version)
    files = {
        path: {"data": base64.b64encode(data).decode("ascii"), "executable": executable}
        for path, (data, executable) in environment_files(version).items()
    }
    return {"files": files, "setup_commands": list(repository["setup_commands"])}


def verdict_body(version: TaskVersion) -> dict[str, Any]:
    repository = repository_of(version)
    return {
        "fail_to_pass": list(repository["fail_to_pass"]),
        "pass_to_pass": list(repository["pass_to_pass"]),
        "hidden": dict(repository["hidden_test_files"]),
        "protected": list(repository["protected_paths"]),
        "timeout_s": settings.SESSIONS["VERDICT_TIMEOUT_S"],
    }
