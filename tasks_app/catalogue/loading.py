"""Loading the sample catalogue into the database, idempotently."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from tasks_app.catalogue.entries import CatalogueEntry, catalogue_entries
from tasks_app.errors import PermissionDenied
from tasks_app.models import State, Task
from tasks_app.services import (
    task_approve,
    task_create,
    task_reject,
    task_retire,
    task_submit,
    task_transition,
    task_version_create,
)

CREATE_CHANGELOG = "Loaded from the sample catalogue."
UPDATE_CHANGELOG = "Updated from the sample catalogue."

# The lifecycle steps that take a new task from draft to its seed state.
SEED_PATHS: dict[str, tuple[str, ...]] = {
    State.DRAFT: (),
    State.SUBMITTED: (State.SUBMITTED,),
    State.VERIFIED: (State.SUBMITTED, State.VERIFIED),
    State.FLAGGED: (State.SUBMITTED, State.FLAGGED),
    State.APPROVED: (State.SUBMITTED, State.VERIFIED, State.APPROVED),
    State.REJECTED: (State.SUBMITTED, State.FLAGGED, State.REJECTED),
    State.RETIRED: (State.RETIRED,),
}
# The audit trail says plainly that these moves are the demo's, not a real verification run.
SEED_NOTES: dict[str, str] = {
    State.SUBMITTED: "Demo seed: submitted for verification.",
    State.VERIFIED: "Demo seed: marked verified without a verification run.",
    State.FLAGGED: "Demo seed: flagged without a verification run, so the review queue has work.",
    State.APPROVED: "Demo seed: approved by the demo reviewer.",
    State.REJECTED: "Demo seed: rejected by the demo reviewer; a stock exercise, rework it into something new.",
    State.RETIRED: "Demo seed: retired, to show a task out of circulation.",
}


@dataclass
class LoadReport:
    label: str = "catalogue"
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # (slug, reason) for tasks whose content changed but that cannot take a new version.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # slug -> the state a newly created task was seeded into.
    seeded: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        counts = f"{len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged"
        line = f"{self.label}: {counts}"
        if self.skipped:
            line += f", {len(self.skipped)} skipped"
        return line


def _seed(task: Task, seed_state: str, *, owner: Any, reviewer: Any | None) -> str:
    """Walk a new task to `seed_state` through the lifecycle services; return the state reached.

    Verified and flagged are the system's moves (actor None, as the pipeline);
    approval and rejection need a reviewer other than the author, so without
    one the task stops in the review queue.
    """
    reached = State.DRAFT
    for step in SEED_PATHS[seed_state]:
        note = SEED_NOTES[step]
        if step == State.SUBMITTED:
            task_submit(actor=owner, task=task, note=note)
        elif step in (State.VERIFIED, State.FLAGGED):
            task_transition(actor=None, task=task, to_state=step, note=note)
        elif step in (State.APPROVED, State.REJECTED):
            if reviewer is None:
                break
            review = task_approve if step == State.APPROVED else task_reject
            review(actor=reviewer, task=task, note=note)
        elif step == State.RETIRED:
            task_retire(actor=owner, task=task, note=note)
        reached = step
    return reached


@transaction.atomic
def catalogue_load(
    *,
    owner: Any,
    reviewer: Any | None = None,
    entries: Iterable[CatalogueEntry] | None = None,
    label: str = "catalogue",
) -> LoadReport:
    """Create the catalogue's tasks, owned by `owner`; approvals and rejections by `reviewer`.

    Steps: validate every entry's content first, so an invalid entry writes
    nothing; then per entry, by slug: a new task is created and walked to its
    seed state; an existing task whose newest version has the same content
    hash is left alone (state included: a re-run never moves tasks); an
    existing task with different content gets a new version, which the
    version service puts back in draft; a retired one is skipped, since it
    must be restored before it can be edited.
    """
    if reviewer is not None and reviewer.pk == owner.pk:
        raise PermissionDenied("Four eyes: the reviewer must not be the tasks' owner.", code="four_eyes")
    entries = list(catalogue_entries() if entries is None else entries)
    contents = {entry.slug: entry.content for entry in entries}
    existing = {task.slug: task for task in Task.objects.filter(slug__in=contents).select_related("latest_version")}
    report = LoadReport(label=label)
    for entry in entries:
        content = contents[entry.slug]
        task = existing.get(entry.slug)
        if task is None:
            task = task_create(
                actor=owner,
                slug=entry.slug,
                title=entry.title,
                content=content,
                tags=list(entry.tags),
                changelog=CREATE_CHANGELOG,
            )
            report.created.append(entry.slug)
            report.seeded[entry.slug] = _seed(task, entry.seed_state, owner=owner, reviewer=reviewer)
        elif task.latest_version is not None and task.latest_version.content_hash == content.content_hash():
            report.unchanged.append(entry.slug)
        elif task.state == State.RETIRED:
            report.skipped.append((entry.slug, "retired; restore it to load the new content"))
        else:
            task_version_create(actor=owner, task=task, content=content, changelog=UPDATE_CHANGELOG)
            report.updated.append(entry.slug)
    return report
