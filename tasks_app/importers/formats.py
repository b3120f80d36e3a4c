"""The formats the importer reads, and how it tells them apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks_app.importers import codecontests, humaneval, mbpp, multilang, native
from tasks_app.importers.records import TaskRecord


@dataclass(frozen=True)
class Format:
    name: str
    marker: str  # a key that only this format's objects carry
    to_record: Callable[[dict[str, Any]], TaskRecord]
    task_slug: Callable[[dict[str, Any]], str | None]


# Order matters for detection: the first format whose marker is present wins.
FORMATS: dict[str, Format] = {
    module.NAME: Format(module.NAME, module.MARKER, module.to_record, module.task_slug)
    for module in (native, humaneval, mbpp, codecontests, multilang)
}


def detect_format(obj: dict[str, Any]) -> Format | None:
    return next((fmt for fmt in FORMATS.values() if fmt.marker in obj), None)


def markers_description() -> str:
    return ", ".join(f"{fmt.marker!r} ({fmt.name})" for fmt in FORMATS.values())
