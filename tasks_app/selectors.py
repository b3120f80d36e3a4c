"""Reads. Views, the API and bulk actions all list tasks through these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from tasks_app.content import SUITE_KINDS
from tasks_app.errors import NotFound, ValidationFailed
from tasks_app.models import State, Tag, Task, TaskVersion, Transition

SORTS = {
    "slug": ("slug",),
    "-slug": ("-slug",),
    "title": ("title", "slug"),
    "-title": ("-title", "slug"),
    "updated": ("updated_at", "slug"),
    "-updated": ("-updated_at", "slug"),
    "state": ("state", "slug"),
    "-state": ("-state", "slug"),
}
DEFAULT_SORT = "-updated"


@dataclass(frozen=True)
class TaskFilters:
    q: str = ""
    state: str = ""
    tag: str = ""
    author: str = ""
    suite_kind: str = ""
    sort: str = DEFAULT_SORT

    @classmethod
    def from_params(cls, params: Any) -> TaskFilters:
        """Build filters from a QueryDict or dict; unknown values are a 400, not an empty page."""
        get = params.get
        filters = cls(
            q=(get("q") or "").strip()[:200],
            state=(get("state") or "").strip(),
            tag=(get("tag") or "").strip().lower(),
            author=(get("author") or "").strip(),
            suite_kind=(get("suite_kind") or "").strip(),
            sort=(get("sort") or DEFAULT_SORT).strip(),
        )
        errors = {}
        if filters.state and filters.state not in State.values:
            errors["state"] = [f"Unknown state {filters.state!r}. One of: {', '.join(State.values)}."]
        if filters.suite_kind and filters.suite_kind not in SUITE_KINDS:
            errors["suite_kind"] = [f"Unknown suite kind {filters.suite_kind!r}. One of: {', '.join(SUITE_KINDS)}."]
        if filters.sort not in SORTS:
            errors["sort"] = [f"Unknown sort {filters.sort!r}. One of: {', '.join(SORTS)}."]
        if errors:
            raise ValidationFailed("Invalid filter.", details=errors)
        return filters

    def as_query(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v and not (k == "sort" and v == DEFAULT_SORT)}


def _search(queryset: QuerySet, q: str) -> QuerySet:
    """Full-text search over title, statement and tags.

    On PostgreSQL: a websearch query against title (weight A) and the newest
    statement (weight B), plus substring matches on slug and title so partial
    words find something. Elsewhere (embedded SQLite): substring matches.
    """
    words = q.split()
    tag_match = Q(tags__name__in=[w.lower() for w in words])
    substring = Q(slug__icontains=q) | Q(title__icontains=q)
    if connection.vendor == "postgresql":
        vector = SearchVector("title", weight="A") + SearchVector("latest_version__statement", weight="B")
        matched = Task.objects.annotate(_doc=vector).filter(_doc=SearchQuery(q, search_type="websearch"))
        text = Q(pk__in=matched.values("pk"))
    else:
        text = Q(latest_version__statement__icontains=q)
    ids = Task.objects.filter(text | substring | tag_match).values("pk")
    return queryset.filter(pk__in=ids)


def task_list(*, filters: TaskFilters | None = None) -> QuerySet:
    filters = filters or TaskFilters()
    qs = Task.objects.select_related("owner", "latest_version", "latest_version__author").prefetch_related("tags")
    if filters.q:
        qs = _search(qs, filters.q)
    if filters.state:
        qs = qs.filter(state=filters.state)
    if filters.tag:
        qs = qs.filter(pk__in=Task.objects.filter(tags__name=filters.tag).values("pk"))
    if filters.author:
        qs = qs.filter(owner__username=filters.author)
    if filters.suite_kind:
        qs = qs.filter(latest_version__suite_kind=filters.suite_kind)
    return qs.order_by(*SORTS[filters.sort])


def task_get(*, slug: str) -> Task:
    try:
        return Task.objects.select_related("owner", "latest_version", "approved_version").get(slug=slug)
    except Task.DoesNotExist as exc:
        raise NotFound(f"No task with slug {slug!r}.") from exc


def task_version_get(*, task: Task, number: int) -> TaskVersion:
    try:
        return (
            TaskVersion.objects.select_related("author", "task", "parent")
            .prefetch_related("solutions")
            .get(task=task, number=number)
        )
    except TaskVersion.DoesNotExist as exc:
        raise NotFound(f"Task {task.slug!r} has no version {number}.") from exc


def task_versions(*, task: Task) -> QuerySet:
    return TaskVersion.objects.filter(task=task).select_related("author").order_by("-number")


def task_history(*, task: Task) -> QuerySet:
    return Transition.objects.filter(task=task).select_related("actor", "version")


def review_queue() -> QuerySet:
    """Tasks waiting for a reviewer: flagged first (they need the closer look), oldest first."""
    flagged_first = Case(When(state=State.FLAGGED, then=Value(0)), default=Value(1), output_field=IntegerField())
    return (
        Task.objects.filter(state__in=[State.VERIFIED, State.FLAGGED])
        .select_related("owner", "latest_version", "latest_version__author")
        .prefetch_related("tags")
        .annotate(_flag_order=flagged_first)
        .order_by("_flag_order", "updated_at", "slug")
    )


def state_counts() -> dict[str, int]:
    from django.db.models import Count

    rows = Task.objects.values("state").annotate(n=Count("pk"))
    counts = {s: 0 for s in State.values}
    counts.update({r["state"]: r["n"] for r in rows})
    return counts


def tag_names() -> list[str]:
    """Tags in use, for the list's tag filter."""
    return list(Tag.objects.filter(tasks__isnull=False).distinct().order_by("name").values_list("name", flat=True))


def task_owners() -> list[str]:
    """Usernames that own at least one task, for the list's author filter."""
    users = get_user_model().objects.filter(owned_tasks__isnull=False).distinct().order_by("username")
    return list(users.values_list("username", flat=True))
