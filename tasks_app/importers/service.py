"""Importing and exporting tasks: the service behind the commands, the API and the UI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from tasks_app.errors import DomainError, PermissionDenied, ValidationFailed
from tasks_app.importers import native
from tasks_app.importers.formats import FORMATS, Format, detect_format, markers_description
from tasks_app.importers.readers import FileProblem, SourceLine, read_json_lines
from tasks_app.importers.records import TaskRecord
from tasks_app.importers.report import WHOLE_FILE, ImportReport
from tasks_app.models import Task
from tasks_app.services import task_create, task_update_details, task_version_create

# Slugs looked up per query; PostgreSQL refuses more than 65535 parameters.
LOOKUP_CHUNK = 500


def tasks_import(
    *, actor: Any, data: bytes, fmt: str | None = None, filename: str = "", dry_run: bool = False
) -> ImportReport:
    """Import tasks from JSONL (plain or gzip), all or nothing.

    Steps: read and bound the file; parse every line; pick the format; turn
    every line into a validated task, collecting every problem; stop there if
    any line is bad. Then, in one transaction, create each new task, add a
    version where the content hash differs, leave equal content alone; roll
    back if a service refuses any line, or always on a dry run.
    """
    report = ImportReport(format=fmt or "", dry_run=dry_run)
    data = bytes(data)  # also accepts a bytearray or memoryview from an upload
    if fmt is not None and fmt not in FORMATS:
        report.add_error(line=WHOLE_FILE, message=f"Unknown format {fmt!r}. One of: {', '.join(FORMATS)}.")
        return _rejected(report)
    try:
        lines = read_json_lines(data, limit=settings.TASKS_MAX_IMPORT_FILE_BYTES)
    except FileProblem as exc:
        report.add_error(line=WHOLE_FILE, message=str(exc))
        return _rejected(report)
    if not lines:
        report.add_error(line=WHOLE_FILE, message="The file holds no tasks: every line is blank.")
        return _rejected(report)

    chosen = FORMATS[fmt] if fmt else _detect(lines, report)
    if chosen is None:
        for line in lines:
            if line.error:
                report.add_error(line=line.number, message=line.error)
        return _rejected(report)
    report.format = chosen.name

    records = _validate(lines, chosen, report)
    if report.errors:
        return _rejected(report)
    changelog = f"Imported from {os.path.basename(filename) or chosen.name}"[:200]
    _write(records, actor=actor, changelog=changelog, report=report)
    if report.errors:
        return _rejected(report)
    return report


def tasks_export(*, queryset: QuerySet[Task] | None = None) -> Iterator[str]:
    """Native-format JSONL lines, one task each (its newest version), in slug order."""
    tasks = (queryset if queryset is not None else Task.objects.all()).filter(latest_version__isnull=False)
    tasks = tasks.select_related("latest_version").prefetch_related("tags", "latest_version__solutions")
    for task in tasks.order_by("slug").iterator(chunk_size=LOOKUP_CHUNK):
        yield native.native_line(native.task_to_native(task))


def _rejected(report: ImportReport) -> ImportReport:
    report.reject()
    return report


def _detect(lines: list[SourceLine], report: ImportReport) -> Format | None:
    first = lines[0]
    if first.value is None:
        report.add_error(
            line=WHOLE_FILE,
            message=f"Cannot detect the format: line {first.number} is not a JSON object. Name the format explicitly.",
        )
        return None
    found = detect_format(first.value)
    if found is None:
        report.add_error(
            line=first.number,
            message=(
                f"Cannot detect the format from this line's keys; expected one of {markers_description()}. "
                "Name the format explicitly."
            ),
            details={"keys": sorted(first.value)[:20]},
        )
    return found


def _validate(lines: list[SourceLine], fmt: Format, report: ImportReport) -> list[tuple[int, TaskRecord]]:
    records: list[tuple[int, TaskRecord]] = []
    first_line_of: dict[str, int] = {}
    for line in lines:
        if line.value is None:
            report.add_error(line=line.number, message=line.error or "Unreadable line.")
            continue
        try:
            record = fmt.to_record(line.value)
        except ValidationFailed as exc:
            report.add_error(line=line.number, task=fmt.task_slug(line.value), message=exc.message, details=exc.details)
            continue
        if record.slug in first_line_of:
            report.add_error(
                line=line.number,
                task=record.slug,
                message=f"Duplicate slug {record.slug!r}: line {first_line_of[record.slug]} already has it.",
                details={"slug": ["Each task may appear once per file."]},
            )
            continue
        first_line_of[record.slug] = line.number
        records.append((line.number, record))
    return records


def _write(records: list[tuple[int, TaskRecord]], *, actor: Any, changelog: str, report: ImportReport) -> None:
    # A dry run goes through the very same services and then rolls back, so it
    # finds what a real run would (a retired task, a missing role), not a guess.
    with transaction.atomic():
        existing: dict[str, Task] = {}
        for index, (number, record) in enumerate(records):
            if index % LOOKUP_CHUNK == 0:
                existing = _existing_tasks([r.slug for _, r in records[index : index + LOOKUP_CHUNK]])
            try:
                # A savepoint per task keeps the transaction usable, so one run
                # reports every refused line instead of only the first.
                with transaction.atomic():
                    outcome, version = _apply(record, existing.get(record.slug), actor=actor, changelog=changelog)
            except PermissionDenied as exc:
                # About the actor, not the line: every other line would say the same.
                report.add_error(line=number, task=record.slug, message=exc.message, details=exc.details)
                break
            except DomainError as exc:
                report.add_error(line=number, task=record.slug, message=exc.message, details=exc.details)
                continue
            report.add_item(
                line=number, slug=record.slug, outcome=outcome, version=version, content_hash=record.content_hash
            )
        if report.dry_run or report.errors:
            transaction.set_rollback(True)


def _existing_tasks(slugs: list[str]) -> dict[str, Task]:
    tasks = Task.objects.filter(slug__in=slugs).select_related("latest_version").prefetch_related("tags")
    return {task.slug: task for task in tasks}


def _apply(record: TaskRecord, task: Task | None, *, actor: Any, changelog: str) -> tuple[str, int]:
    """Write one task; return its outcome and the number of its newest version."""
    if task is None:
        task = task_create(
            actor=actor,
            slug=record.slug,
            title=record.title,
            content=record.content,
            tags=record.tags,
            changelog=changelog,
        )
        return "created", task.latest_version.number
    # A curator's title and tags win over a re-imported file's: the file can add
    # tags a task lacks but never takes one away or renames the task.
    current_tags = {tag.name for tag in task.tags.all()}
    if not set(record.tags) <= current_tags:
        task_update_details(actor=actor, task=task, tags=sorted(current_tags | set(record.tags)))
    latest = task.latest_version
    if latest is not None and latest.content_hash == record.content_hash:
        return "unchanged", latest.number
    result = task_version_create(actor=actor, task=task, content=record.content, changelog=changelog)
    return ("updated" if result.created else "unchanged"), result.version.number
