"""Creating tasks and their immutable versions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from tasks_app.content import VersionContent
from tasks_app.errors import Conflict, InvalidTransition, PermissionDenied, ValidationFailed
from tasks_app.models import Solution, State, Tag, Task, TaskVersion, Transition
from tasks_app.roles import CURATOR, has_role
from tasks_app.services.blobs import blobs_store

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,119}$")
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_TAGS = 20
MAX_TITLE = 200
MAX_CHANGELOG = 4000


@dataclass(frozen=True)
class VersionResult:
    version: TaskVersion
    created: bool


def validate_slug(slug: Any, *, field: str = "slug") -> str:
    if not isinstance(slug, str) or not SLUG_RE.match(slug):
        raise ValidationFailed(
            f"Invalid slug {slug!r}.",
            details={field: ["Use 1-120 lowercase letters, digits and hyphens, starting with a letter or digit."]},
        )
    return slug


def normalise_tags(tags: Any, *, field: str = "tags") -> list[str]:
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValidationFailed("Tags must be a list of strings.", details={field: ["Expected a list of strings."]})
    cleaned = sorted({t.strip().lower() for t in tags if t.strip()})
    bad = [t for t in cleaned if not TAG_RE.match(t)]
    if bad:
        raise ValidationFailed(
            f"Invalid tag(s): {', '.join(map(repr, bad))}.",
            details={field: [f"{t!r}: use lowercase letters, digits and hyphens (at most 64)." for t in bad]},
        )
    if len(cleaned) > MAX_TAGS:
        raise ValidationFailed("Too many tags.", details={field: [f"At most {MAX_TAGS} tags, got {len(cleaned)}."]})
    return cleaned


def validate_title(title: Any) -> str:
    if not isinstance(title, str) or not title.strip():
        raise ValidationFailed("A title is required.", details={"title": ["This field may not be blank."]})
    if len(title) > MAX_TITLE or "\x00" in title:
        raise ValidationFailed("Invalid title.", details={"title": [f"At most {MAX_TITLE} characters, no NUL."]})
    return title.strip()


def validate_changelog(message: Any) -> str:
    if message is None:
        return ""
    if not isinstance(message, str) or len(message) > MAX_CHANGELOG or "\x00" in message:
        raise ValidationFailed(
            "Invalid changelog message.", details={"changelog": [f"A string of at most {MAX_CHANGELOG} characters."]}
        )
    return message.strip()


def _require_curator(actor: Any) -> None:
    if not has_role(actor, CURATOR):
        raise PermissionDenied("Only curators can author tasks.")


def _set_tags(task: Task, names: list[str]) -> None:
    existing = {t.name: t for t in Tag.objects.filter(name__in=names)}
    missing = [Tag(name=n) for n in names if n not in existing]
    if missing:
        Tag.objects.bulk_create(missing, ignore_conflicts=True)
        existing = {t.name: t for t in Tag.objects.filter(name__in=names)}
    task.tags.set([existing[n] for n in names])


def _insert_version(
    *, task: Task, number: int, content: VersionContent, actor: Any, changelog: str, parent: TaskVersion | None
) -> TaskVersion:
    version = TaskVersion(
        task=task,
        number=number,
        statement=content.statement,
        language=content.language,
        entry_point=content.entry_point,
        starter_code=content.starter_code,
        suite_kind=content.suite_kind,
        test_setup=content.test_setup,
        visible_tests=content.visible_tests,
        hidden_tests=content.hidden_tests,
        time_limit_s=content.time_limit_s,
        memory_limit_mb=content.memory_limit_mb,
        repository=content.repository.canonical() if content.repository is not None else None,
        precondition=content.precondition,
        generated_tests=content.generated_tests,
        comparator=content.comparator,
        test_generator=content.test_generator,
        signature=content.signature,
        changelog=changelog,
        author=actor,
        parent=parent,
        content_hash=content.content_hash(),
    )
    if content.repository is not None:
        blobs_store(blobs=content.repository.blobs)
    version.save()
    Solution.objects.bulk_create(
        [
            Solution(version=version, role=s.role, label=s.label, code=s.code, note=s.note)
            for s in content.sorted_solutions()
        ]
    )
    return version


@transaction.atomic
def task_create(
    *,
    actor: Any,
    slug: str,
    title: str,
    content: VersionContent,
    tags: list[str] | None = None,
    changelog: str = "",
) -> Task:
    """Create a task with its first version, in draft."""
    _require_curator(actor)
    slug = validate_slug(slug)
    title = validate_title(title)
    tag_names = normalise_tags(tags or [])
    changelog = validate_changelog(changelog) or "Initial version."
    if Task.objects.filter(slug=slug).exists():
        raise Conflict(f"A task with slug {slug!r} already exists.", details={"slug": ["Already taken."]})
    try:
        with transaction.atomic():
            task = Task.objects.create(slug=slug, title=title, owner=actor, state=State.DRAFT)
    except IntegrityError as exc:  # a concurrent create of the same slug
        raise Conflict(f"A task with slug {slug!r} already exists.", details={"slug": ["Already taken."]}) from exc
    _set_tags(task, tag_names)
    version = _insert_version(task=task, number=1, content=content, actor=actor, changelog=changelog, parent=None)
    Task.objects.filter(pk=task.pk).update(latest_version=version, updated_at=timezone.now())
    task.latest_version = version
    Transition.objects.create(
        task=task, version=version, actor=actor, from_state="", to_state=State.DRAFT, note="Created."
    )
    return task


@transaction.atomic
def task_version_create(
    *,
    actor: Any,
    task: Task,
    content: VersionContent,
    changelog: str = "",
    base_number: int | None = None,
) -> VersionResult:
    """Save edited content as a new version.

    Steps: lock the task row (so two editors never get the same number);
    refuse if the editor started from an older version than the newest
    (`base_number`), so nobody silently overwrites someone else's edit;
    return the newest version unchanged when the content hash is the same;
    otherwise insert version N+1 and move the task back to draft.
    """
    _require_curator(actor)
    changelog = validate_changelog(changelog)
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.state == State.RETIRED:
        raise InvalidTransition("The task is retired; restore it before editing.", details={"state": task.state})
    latest = task.latest_version
    if base_number is not None and latest is not None and latest.number != base_number:
        raise Conflict(
            f"The task has changed since you opened it: you edited v{base_number}, the newest is v{latest.number}.",
            details={"base_number": base_number, "latest_number": latest.number},
        )
    new_hash = content.content_hash()
    if latest is not None and latest.content_hash == new_hash:
        return VersionResult(version=latest, created=False)
    number = (latest.number if latest else 0) + 1
    version = _insert_version(
        task=task,
        number=number,
        content=content,
        actor=actor,
        changelog=changelog or f"Version {number}.",
        parent=latest,
    )
    previous_state = task.state
    Task.objects.filter(pk=task.pk).update(latest_version=version, state=State.DRAFT, updated_at=timezone.now())
    task.latest_version, task.state = version, State.DRAFT
    Transition.objects.create(
        task=task,
        version=version,
        actor=actor,
        from_state=previous_state,
        to_state=State.DRAFT,
        note=f"New version v{number}: {version.changelog}",
    )
    return VersionResult(version=version, created=True)


@transaction.atomic
def task_update_details(*, actor: Any, task: Task, title: str | None = None, tags: list[str] | None = None) -> Task:
    """Change a task's title or tags; these are not version content."""
    _require_curator(actor)
    if title is not None:
        task.title = validate_title(title)
        task.save(update_fields=["title", "updated_at"])
    if tags is not None:
        _set_tags(task, normalise_tags(tags))
    return task
