"""The repository part of the sample catalogue: native JSONL, one file per project.

Each file under data/repositories/ holds the tasks made from one of the small projects
in repositories/ (written for this platform) by `synthesize_repository_tasks`, then
curated by hand: statements rewritten, failing tests held out as hidden tests for
some, an adversarial patch for some. The lines are the native format that
`import_tasks` reads, so a file can be imported on its own too.

They load submitted, so the worker of `make run` verifies them (through the session
engine: about 10 s a task on two cores), and one task a project is approved for the
training demo's agentic pool (`make train-demo`). Those four passed verification when
this was written; approval goes through submitted, so they are verified too.
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks_app.catalogue.entries import DATA_DIR, CatalogueEntry
from tasks_app.errors import ValidationFailed
from tasks_app.models import State

REPOSITORY_DATA_DIR = DATA_DIR / "repositories"
PROJECTS_DIR = Path(__file__).resolve().parent / "repositories"
NATIVE_FORMAT = "taskplatform.task/v1"
APPROVED_SEEDS = frozenset(
    {"inikit-get-default", "slugtext-unique-slug", "spans-business-days", "vecmat-determinant-large-matrices"}
)
LINE_FIELDS = {"format", "slug", "title", "tags", "version"}


def _entry(project: str, where: str, raw: object) -> CatalogueEntry:
    if not isinstance(raw, dict) or set(raw) != LINE_FIELDS or raw.get("format") != NATIVE_FORMAT:
        raise ValidationFailed(
            f"{where}: expected a {NATIVE_FORMAT} object with exactly {', '.join(sorted(LINE_FIELDS))}.",
            details={where: ["Expected a native task line."]},
        )
    tags = raw["tags"]
    if not isinstance(tags, list) or project not in tags or "repository" not in tags:
        raise ValidationFailed(
            f"{where}: tags must include the project {project!r} and 'repository'.",
            details={f"{where}.tags": [f"Include {project!r} and 'repository'."]},
        )
    if not isinstance(raw["version"], dict) or raw["version"].get("suite_kind") != "repository":
        raise ValidationFailed(f"{where}: not a repository task.", details={f"{where}.version": ["Not repository."]})
    return CatalogueEntry(
        area=project,
        slug=raw["slug"],
        title=raw["title"],
        tags=tuple(tags),
        seed_state=State.APPROVED if raw["slug"] in APPROVED_SEEDS else State.SUBMITTED,
        data=raw["version"],
    )


def repository_entries(data_dir: Path = REPOSITORY_DATA_DIR) -> list[CatalogueEntry]:
    """Every repository task of the catalogue, project by project (files in name order)."""
    entries: list[CatalogueEntry] = []
    seen: set[str] = set()
    for path in sorted(data_dir.glob("*.jsonl")):
        project = path.stem
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            entry = _entry(project, f"{path.name}:{number}", json.loads(line))
            if entry.slug in seen:
                raise ValidationFailed(f"Duplicate slug {entry.slug!r}.", details={"slug": [f"{entry.slug!r} twice."]})
            seen.add(entry.slug)
            entries.append(entry)
    return entries
