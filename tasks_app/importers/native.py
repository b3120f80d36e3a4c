"""The platform's own format, one task a line, written by `tasks_export`:

    {"format": "taskplatform.task/v1", "slug": ..., "title": ..., "tags": [...],
     "version": {<content fields>}, "content_hash": "<sha256>"}

`version` holds exactly the canonical content that `content_hash` covers, so
a file can be checked against its hashes, and export -> import -> export
gives the same bytes. A repository task's `version.repository.files` holds its
tree ({path: text} or {path: {"base64": ...}}), which the hash covers through
the manifest of digests (docs/repository-tasks.md).
"""

from __future__ import annotations

import json
from typing import Any

from tasks_app.importers.records import Problems, TaskRecord, build_record
from tasks_app.models import Task
from tasks_app.selectors import version_input

NAME = "native"
MARKER = "format"
FORMAT_ID = "taskplatform.task/v1"
REQUIRED = ("format", "slug", "title", "version")
OPTIONAL = ("tags", "content_hash")


def task_slug(obj: dict[str, Any]) -> str | None:
    slug = obj.get("slug")
    return slug if isinstance(slug, str) and slug else None


def to_record(obj: dict[str, Any]) -> TaskRecord:
    problems = Problems()
    problems.check_keys(obj, required=REQUIRED, optional=OPTIONAL)
    if "format" in obj and obj["format"] != FORMAT_ID:
        problems.add("format", f"Unknown format {obj['format']!r}; this importer reads {FORMAT_ID!r}.")
    stated_hash = obj.get("content_hash")
    if stated_hash is not None and not isinstance(stated_hash, str):
        problems.add("content_hash", "Expected a string.")
    record = build_record(
        slug=obj.get("slug"),
        title=obj.get("title"),
        tags=obj.get("tags", []),
        content=obj.get("version"),
        content_prefix="version.",
        problems=problems,
    )
    if stated_hash is not None and stated_hash != record.content_hash:
        problems.add(
            "content_hash",
            f"content_hash mismatch: file says {stated_hash}, content hashes to {record.content_hash}.",
        )
        problems.raise_if_any()
    return record


def task_to_native(task: Task) -> dict[str, Any]:
    """The task's newest version as a native-format object."""
    version = task.latest_version
    return {
        "format": FORMAT_ID,
        "slug": task.slug,
        "title": task.title,
        "tags": sorted(tag.name for tag in task.tags.all()),
        "version": version_input(version=version),
        "content_hash": version.content_hash,
    }


def native_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
