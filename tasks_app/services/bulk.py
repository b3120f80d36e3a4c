"""Bulk actions over a whole filtered result (not just the visible page)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from tasks_app.errors import DomainError, PermissionDenied
from tasks_app.models import Tag, Task
from tasks_app.roles import CURATOR, REVIEWER, has_role
from tasks_app.services.lifecycle import task_transition
from tasks_app.services.versions import normalise_tags

MAX_BULK = 10_000


@dataclass
class BulkResult:
    applied: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.applied + len(self.skipped)


def _guard_size(queryset: QuerySet) -> list[int]:
    ids = list(queryset.order_by().values_list("pk", flat=True)[: MAX_BULK + 1])
    if len(ids) > MAX_BULK:
        raise DomainError(f"A bulk action covers at most {MAX_BULK} tasks; narrow the filter.", code="too_many")
    return ids


@transaction.atomic
def tasks_bulk_tag(*, actor: Any, queryset: QuerySet, add: list[str] = (), remove: list[str] = ()) -> BulkResult:
    """Add and remove tags on every task of `queryset`, in one transaction."""
    if not has_role(actor, CURATOR):
        raise PermissionDenied("Only curators can tag tasks.")
    add_names = normalise_tags(list(add), field="add")
    remove_names = normalise_tags(list(remove), field="remove")
    ids = _guard_size(queryset)
    through = Task.tags.through
    if add_names:
        Tag.objects.bulk_create([Tag(name=n) for n in add_names], ignore_conflicts=True)
        tag_ids = list(Tag.objects.filter(name__in=add_names).values_list("pk", flat=True))
        through.objects.bulk_create([through(task_id=t, tag_id=g) for t in ids for g in tag_ids], ignore_conflicts=True)
    if remove_names:
        through.objects.filter(task_id__in=ids, tag__name__in=remove_names).delete()
    return BulkResult(applied=len(ids))


def tasks_bulk_transition(*, actor: Any, queryset: QuerySet, to_state: str, note: str = "") -> BulkResult:
    """Apply one transition to every task it is allowed for; report the rest.

    Each task moves in its own transaction: one task that may not move (wrong
    state, four eyes) is reported as skipped with its reason and does not
    undo the others.
    """
    if not has_role(actor, CURATOR, REVIEWER):
        raise PermissionDenied("Only curators and reviewers act on tasks in bulk.")
    result = BulkResult()
    ids = _guard_size(queryset)
    for task in Task.objects.filter(pk__in=ids).order_by("slug"):
        try:
            task_transition(actor=actor, task=task, to_state=to_state, note=note)
        except DomainError as exc:
            result.skipped.append((task.slug, exc.message))
        else:
            result.applied += 1
    return result
