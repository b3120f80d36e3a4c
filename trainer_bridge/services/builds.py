"""Snapshot exports written to a file in the background, for snapshots too large to
stream comfortably: request a build, a worker writes it with its progress, then
it is downloaded as a file with its SHA-256.

A build writes exactly the bytes the streaming export sends for the same options
(the same chunk functions, the same gzip), so either way a trainer gets one file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from tasks_app.errors import NotFound, ValidationFailed
from trainer_bridge import export
from trainer_bridge.export import ExportFormat
from trainer_bridge.models import ExportBuild, Snapshot

log = logging.getLogger(__name__)

ACTIVE = ("queued", "running")
# A running build whose worker died holds its claim until this long past the task's
# hard time limit: by then Celery has certainly killed that run.
STALE_MARGIN_S = 60


def exports_dir() -> Path:
    return Path(settings.VAR_DIR) / "exports"


def _stale_before() -> Any:
    limit = int(getattr(settings, "CELERY_TASK_TIME_LIMIT", 1800) or 1800)
    return timezone.now() - timedelta(seconds=limit + STALE_MARGIN_S)


def build_progress(build: ExportBuild) -> float:
    """Share of rows written, 0 to 1 (1 once done)."""
    if build.state == "done":
        return 1.0
    return min(1.0, build.rows_done / build.rows_total) if build.rows_total else 0.0


def build_needs_worker(build: ExportBuild) -> bool:
    """True when no live worker holds the build: queued (its message may be lost, and a
    second one is harmless) or running past the stale limit."""
    if build.state == "queued":
        return True
    return build.state == "running" and (build.started_at is None or build.started_at < _stale_before())


def build_file(*, build: ExportBuild) -> Path:
    """The finished build's file. NotFound if it is not done or its file is gone."""
    if build.state != "done" or not build.path:
        raise NotFound(f"Export build {build.id} has no file yet ({build.state}).")
    root = exports_dir().resolve()
    path = (Path(settings.VAR_DIR) / build.path).resolve()
    # The stored path is ours, but a file outside the exports folder is never served.
    if root not in path.parents or not path.is_file():
        raise NotFound(f"The file of export build {build.id} is gone; request the build again.")
    return path


def _validated(format: str, gzip: Any, with_hidden_tests: Any) -> ExportFormat:
    problems: dict[str, list[str]] = {}
    formats = export.FORMATS
    if format not in formats:
        problems["format"] = [f"One of: {', '.join(formats)}."]
    for name, value in (("gzip", gzip), ("with_hidden_tests", with_hidden_tests)):
        if not isinstance(value, bool):
            problems[name] = ["Expected true or false."]
    if gzip is True and format in formats and formats[format].self_compressed:
        problems["gzip"] = [f"Not with format={format}: it is compressed inside the file."]
    if problems:
        raise ValidationFailed("The export build's options are not valid.", details=problems)
    return formats[format]


def build_request(
    *, snapshot: Snapshot, format: str, gzip: bool = False, with_hidden_tests: bool = False, actor: Any = None
) -> tuple[ExportBuild, bool]:
    """The build of `snapshot` with these options: an existing one that is done (its
    file still there) or in progress, else a new queued one. Returns (build, created).
    The caller enqueues it (after commit) when build_needs_worker says so."""
    _validated(format, gzip, with_hidden_tests)
    options = {"snapshot": snapshot, "format": format, "gzip": gzip, "with_hidden_tests": with_hidden_tests}
    with transaction.atomic():
        # Serialise requests for one snapshot, so two at once make one build.
        Snapshot.objects.select_for_update().filter(pk=snapshot.pk).first()
        for build in ExportBuild.objects.filter(**options, state__in=("done", *ACTIVE)).order_by("-created_at"):
            if build.state != "done":
                return build, False
            try:
                build_file(build=build)
            except NotFound:
                continue  # var/ was cleared: build it again
            return build, False
        build = ExportBuild.objects.create(id=uuid.uuid4(), rows_total=snapshot.size, requested_by=actor, **options)
    return build, True


def build_get(*, build_id: Any) -> ExportBuild:
    try:
        key = uuid.UUID(str(build_id))
    except ValueError:
        raise NotFound(f"No export build {build_id!r}.") from None
    build = ExportBuild.objects.select_related("snapshot__pool").filter(pk=key).first()
    if build is None:
        raise NotFound(f"No export build {build_id!r}.")
    return build


def _counted(chunks: Iterator[bytes], build: ExportBuild, rows_in: Callable[[bytes], int]) -> Iterator[bytes]:
    """Pass `chunks` through, recording rows written as they go: at most once per
    export chunk's worth of rows, so a per-record format does not write per record."""
    done = recorded = 0
    for chunk in chunks:
        yield chunk
        done = min(build.rows_total, done + rows_in(chunk))
        if done - recorded >= export.CHUNK:
            ExportBuild.objects.filter(pk=build.pk, state="running", started_at=build.started_at).update(rows_done=done)
            recorded = done


def _write(build: ExportBuild, fmt: ExportFormat, final: Path) -> tuple[int, str]:
    """Write the export next to `final`, then rename it there in one step: readers see
    the whole file or none. Returns (size, sha256)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=final.parent, prefix=f".{build.id}.", suffix=".part", delete=False)  # noqa: SIM115
    digest, size = hashlib.sha256(), 0
    try:
        with handle:
            chunks = _counted(fmt.chunks(build.snapshot, with_hidden_tests=build.with_hidden_tests), build, fmt.rows_in)
            for piece in export.gzipped(chunks) if build.gzip else chunks:
                handle.write(piece)
                digest.update(piece)
                size += len(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, final)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return size, digest.hexdigest()


def _final_path(build: ExportBuild, fmt: ExportFormat) -> Path:
    return exports_dir() / f"{build.id}.{fmt.name}{'.gz' if build.gzip else ''}"


def build_run(*, build_id: Any) -> ExportBuild:
    """Write one build's file; a no-op for a build that is done, failed, or held by a
    live worker, so a redelivered message does nothing twice.

    1. Claim it: one conditional UPDATE from queued (or stale running) to running.
    2. Drop what a dead worker left of its temporary file.
    3. Write the export to a temporary file beside the final path, counting rows.
    4. Rename it into place; record size, SHA-256 and done, if the claim still holds.
    On an error: remove the temporary file, record failed with the message.
    """
    build = build_get(build_id=build_id)
    now = timezone.now()
    claimed = (
        ExportBuild.objects.filter(pk=build.pk)
        .filter(
            Q(state="queued") | Q(state="running", started_at__lt=_stale_before()) | Q(state="running", started_at=None)
        )
        .update(state="running", started_at=now, rows_done=0, error="", rows_total=build.snapshot.size)
    )
    if not claimed:
        build.refresh_from_db()
        return build
    build.refresh_from_db()
    for leftover in exports_dir().glob(f".{build.id}.*.part"):
        leftover.unlink(missing_ok=True)
    fmt = export.FORMATS.get(build.format)
    mine = ExportBuild.objects.filter(pk=build.pk, state="running", started_at=build.started_at)
    try:
        if fmt is None:
            raise ValueError(f"Format {build.format!r} is no longer offered.")
        final = _final_path(build, fmt)
        size, sha256 = _write(build, fmt, final)
    except Exception as exc:
        log.exception("Export build %s failed", build.pk)
        mine.update(state="failed", error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now())
        build.refresh_from_db()
        return build
    mine.update(
        state="done",
        rows_done=build.rows_total,
        path=str(final.relative_to(Path(settings.VAR_DIR))),
        size_bytes=size,
        sha256=sha256,
        finished_at=timezone.now(),
    )
    build.refresh_from_db()
    return build
