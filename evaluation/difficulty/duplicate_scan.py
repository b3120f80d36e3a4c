"""Scanning the catalogue for near-duplicate tasks and flagging both of each pair."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evaluation.difficulty.duplicates import CODE_THRESHOLD, STATEMENT_THRESHOLD, Item, find_duplicates
from evaluation.models import TaskFlag
from tasks_app.models import State, Task

DUPLICATE = "DUPLICATE"


def _item(task: Task) -> Item:
    version = task.latest_version
    references = [s.code for s in version.solutions.all() if s.role == "reference"]
    tests = [version.test_setup or "", *version.visible_tests, *version.hidden_tests]
    return Item(task.slug, version.statement, references[0] if references else "", tuple(t for t in tests if t))


def duplicates_scan(
    *, statement_threshold: float = STATEMENT_THRESHOLD, code_threshold: float = CODE_THRESHOLD
) -> list[dict[str, Any]]:
    """Flag every pair of near-duplicate tasks (latest versions, retired tasks left out).

    Steps: read each task's statement, first reference and tests; find the pairs
    (duplicates.find_duplicates); in one transaction, replace every DUPLICATE flag
    with one per task of each pair, naming the other task and saying why.
    Returns the pairs found.
    """
    tasks = list(
        Task.objects.exclude(state=State.RETIRED)
        .exclude(latest_version=None)
        .select_related("latest_version")
        .prefetch_related("latest_version__solutions")
        .order_by("slug")
    )
    by_slug = {t.slug: t for t in tasks}
    pairs = find_duplicates([_item(t) for t in tasks], statement_threshold=statement_threshold,
                            code_threshold=code_threshold)  # fmt: skip
    flags = []
    for pair in pairs:
        why = " and ".join(pair.reasons)
        for this, other in ((pair.first, pair.second), (pair.second, pair.first)):
            details = {
                "statement_similarity": pair.statement_similarity,
                "code_similarity": pair.code_similarity,
                "identical_tests": pair.identical_tests,
                "reasons": list(pair.reasons),
                "other": other,
            }
            message = (
                f"Near-duplicate of {other} ({why}: statements {pair.statement_similarity:.0%} alike, reference "
                f"code {pair.code_similarity:.0%}). Training on both counts one problem twice; keep one."
            )
            flags.append(TaskFlag(task=by_slug[this], related=by_slug[other], code=DUPLICATE, severity="error",
                                  message=message, details=details))  # fmt: skip
    with transaction.atomic():
        TaskFlag.objects.filter(code=DUPLICATE).delete()
        TaskFlag.objects.bulk_create(flags)
    return [pair.__dict__ for pair in pairs]
