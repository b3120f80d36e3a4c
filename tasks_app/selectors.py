"""Reads. Views, the API and bulk actions all list tasks through these."""

from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from tasks_app.content import SUITE_KINDS, VersionContent
from tasks_app.errors import NotFound, ValidationFailed
from tasks_app.models import Blob, State, Tag, Task, TaskVersion, Transition
from tasks_app.repository.paths import BadPath, normalise_path

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


# -- repository tasks -------------------------------------------------------------------------


def blobs_get(*, digests: list[str]) -> dict[str, bytes]:
    """The bytes of each digest; NotFound names a missing one (the store lost a file)."""
    wanted = sorted(set(digests))
    found: dict[str, bytes] = {}
    for start in range(0, len(wanted), 1000):
        rows = Blob.objects.filter(sha256__in=wanted[start : start + 1000]).values_list("sha256", "data")
        found.update((digest, bytes(data)) for digest, data in rows)
    missing = [d for d in wanted if d not in found]
    if missing:
        raise NotFound(f"The blob store has no file with SHA-256 {missing[0]}.")
    return found


def version_input(*, version: TaskVersion) -> dict[str, Any]:
    """The raw content that `VersionContent.parse` turns back into this version: what an
    export writes and an edit starts from. For a repository task it carries the files'
    bytes, which the canonical form only names by digest."""
    content = VersionContent.from_version(version)
    raw = content.canonical()
    if content.repository is not None:
        blobs = blobs_get(digests=[f.sha256 for f in content.repository.files])
        raw["repository"] = content.repository.input_form(blobs)
    return raw


def version_file(*, version: TaskVersion, path: str) -> tuple[str, bytes, bool]:
    """(normalised path, bytes, executable) of one file of a repository version's tree."""
    try:
        normal = normalise_path(path)
    except BadPath as exc:
        raise ValidationFailed(str(exc), details={"path": [str(exc)]}) from exc
    entry = (version.repository or {}).get("manifest", {}).get(normal)
    if entry is None:
        raise NotFound(f"Version {version.number} of {version.task.slug!r} has no file {normal!r} in its tree.")
    return normal, blobs_get(digests=[entry["sha256"]])[entry["sha256"]], bool(entry["executable"])


def version_tree_tar(*, version: TaskVersion) -> bytes:
    """The tree as a gzipped tar, the same bytes every time (sorted, zero times and owners),
    so its own digest is as stable as the version's hash. Hidden tests are not in it."""
    if not version.repository:
        raise NotFound(f"Version {version.number} of {version.task.slug!r} is not a repository task.")
    manifest = version.repository["manifest"]
    blobs = blobs_get(digests=[e["sha256"] for e in manifest.values()])
    out = io.BytesIO()
    # mtime=0 and no name: the gzip header would otherwise carry the time of the request.
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="", compresslevel=6) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path in sorted(manifest):
            data = blobs[manifest[path]["sha256"]]
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 0
            info.mode = 0o755 if manifest[path]["executable"] else 0o644
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()
