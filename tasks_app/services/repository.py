"""Writes of repository tasks: a task or a version from an uploaded archive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.models import Task, TaskVersion
from tasks_app.repository.archive import ArchiveTask, archive_task
from tasks_app.services.versions import task_create, task_version_create


@dataclass(frozen=True)
class ArchiveResult:
    task: Task
    version: TaskVersion
    created: bool  # False: the archive's content equals the newest version's


def archive_content(laid_out: ArchiveTask) -> VersionContent:
    """An archive's content through `VersionContent.parse`, its problems named by archive
    member (`archive["repo/x.py"]`, `task.json.fail_to_pass`) rather than by field path."""
    try:
        return VersionContent.parse(laid_out.content)
    except ValidationFailed as exc:
        raise ValidationFailed.naming({laid_out.rename(p): m for p, m in exc.details.items()}) from exc


@transaction.atomic
def task_archive_import(
    *,
    actor: Any,
    data: bytes,
    task: Task | None = None,
    tags: list[str] | None = None,
    changelog: str = "",
    base_number: int | None = None,
) -> ArchiveResult:
    """Create a repository task from an archive, or (with `task`) save it as the task's next version.

    Steps: read the archive under its caps (nothing touches the database before it is
    whole and valid); parse its content like any other input; then create the task
    or the version in this one transaction, so a refusal leaves nothing behind.
    """
    laid_out = archive_task(bytes(data))
    content = archive_content(laid_out)
    message = changelog or laid_out.changelog
    if task is None:
        extra = list(tags or [])
        tag_list = (laid_out.tags if isinstance(laid_out.tags, list) else []) + extra
        created = task_create(
            actor=actor,
            slug=laid_out.slug,
            title=laid_out.title,
            tags=tag_list,
            content=content,
            changelog=message or "Uploaded as an archive.",
        )
        return ArchiveResult(task=created, version=created.latest_version, created=True)
    if laid_out.slug is not None and laid_out.slug != task.slug:
        raise ValidationFailed(
            f"task.json names the task {laid_out.slug!r}, but this upload is a new version of {task.slug!r}.",
            details={"task.json.slug": [f"Expected {task.slug!r} or no slug."]},
        )
    result = task_version_create(
        actor=actor, task=task, content=content, changelog=message or "Uploaded as an archive.", base_number=base_number
    )
    return ArchiveResult(task=task, version=result.version, created=result.created)
