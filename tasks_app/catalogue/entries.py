"""Reading the sample catalogue: one JSON file per area under data/."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.models import State

DATA_DIR = Path(__file__).resolve().parent / "data"
ENTRY_FIELDS = ("slug", "title", "tags", "seed_state", "content")
# Where the demo may put a task; "rejected" is reachable too, so every column of the UI has a card.
SEED_STATES = (
    State.DRAFT,
    State.SUBMITTED,
    State.VERIFIED,
    State.FLAGGED,
    State.APPROVED,
    State.REJECTED,
    State.RETIRED,
)


@dataclass(frozen=True)
class CatalogueEntry:
    """One sample task as stored: identity, tags, demo state and raw content."""

    area: str
    slug: str
    title: str
    tags: tuple[str, ...]
    seed_state: str
    data: dict[str, Any] = field(repr=False, compare=False)

    @cached_property
    def content(self) -> VersionContent:
        """The content, validated like any other input (raises ValidationFailed)."""
        return VersionContent.parse(self.data, prefix=f"{self.slug}.")


def _entry(area: str, index: int, raw: Any) -> CatalogueEntry:
    where = f"{area}.json[{index}]"
    if not isinstance(raw, dict) or set(raw) != set(ENTRY_FIELDS):
        keys = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise ValidationFailed(
            f"{where}: expected an object with exactly {', '.join(ENTRY_FIELDS)}; got {keys}.",
            details={where: [f"Expected keys: {', '.join(ENTRY_FIELDS)}."]},
        )
    if raw["seed_state"] not in SEED_STATES:
        raise ValidationFailed(
            f"{where}: unknown seed_state {raw['seed_state']!r}.",
            details={f"{where}.seed_state": [f"One of: {', '.join(SEED_STATES)}."]},
        )
    if not isinstance(raw["tags"], list) or area not in raw["tags"]:
        raise ValidationFailed(
            f"{where}: tags must be a list that includes the area tag {area!r}.",
            details={f"{where}.tags": [f"Include {area!r}."]},
        )
    return CatalogueEntry(
        area=area,
        slug=raw["slug"],
        title=raw["title"],
        tags=tuple(raw["tags"]),
        seed_state=raw["seed_state"],
        data=raw["content"],
    )


def catalogue_entries(data_dir: Path = DATA_DIR) -> list[CatalogueEntry]:
    """Every sample task, area by area (files in name order), in file order within an area.

    The shape of each entry is checked here; its content is validated by
    `VersionContent.parse` when `entry.content` is first read.
    """
    entries: list[CatalogueEntry] = []
    seen: dict[str, str] = {}
    for path in sorted(data_dir.glob("*.json")):
        area = path.stem
        raw_entries = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw_entries, list):
            raise ValidationFailed(f"{path.name}: expected a list of tasks.", details={path.name: ["Expected a list."]})
        for index, raw in enumerate(raw_entries):
            entry = _entry(area, index, raw)
            if entry.slug in seen:
                raise ValidationFailed(
                    f"Duplicate slug {entry.slug!r} in {seen[entry.slug]}.json and {area}.json.",
                    details={"slug": [f"{entry.slug!r} is used twice."]},
                )
            seen[entry.slug] = area
            entries.append(entry)
    return entries
