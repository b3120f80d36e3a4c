"""What curators decide about proposed tests, from the report, the review queue and the
API: accept (a new version with them as hidden tests) or dismiss.

Every entry point checks the curator role first: accepting writes a version, which is
editing the task. proposals.py does the writing; here the proposals are found from
what each caller names (ids, a version, a selection of tasks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.models import ProposedTest, ProposedTestState
from evaluation.verification.generated.proposals import AcceptResult, proposed_tests_accept, proposed_tests_dismiss
from evaluation.verification.generated.selectors import latest_verifications, pending_proposals, proposals_by_ids
from tasks_app.errors import NotFound, PermissionDenied, ValidationFailed
from tasks_app.models import Task, TaskVersion
from tasks_app.roles import CURATOR, has_role

MAX_TASKS = 200  # a review-queue selection: a page of the queue is 50


def _require_curator(actor: Any) -> None:
    if not has_role(actor, CURATOR):
        raise PermissionDenied("Only curators accept or dismiss proposed tests: accepting one edits the task.")


def proposed_tests_accept_ids(*, actor: Any, ids: Any) -> AcceptResult:
    """Accept the proposals `ids` names (a new version per task; the rest reported skipped)."""
    _require_curator(actor)
    return proposed_tests_accept(actor=actor, proposals=proposals_by_ids(ids=ids))


def proposed_tests_dismiss_ids(*, actor: Any, ids: Any) -> int:
    """Dismiss the proposals `ids` names that are still proposed; returns how many."""
    _require_curator(actor)
    return proposed_tests_dismiss(actor=actor, proposals=proposals_by_ids(ids=ids))


def _of_version(version: TaskVersion, ids: Sequence[int] | None) -> list[ProposedTest]:
    """The proposals of `version` that `ids` names, or, with None, every one its newest
    verification (the one its report shows) still proposes."""
    rows = ProposedTest.objects.filter(version=version)
    if ids is None:
        newest = latest_verifications([version.pk]).get(version.pk)
        if newest is None:
            return []
        return list(rows.filter(verification_id=newest[0], state=ProposedTestState.PROPOSED).order_by("id"))
    found = list(rows.filter(pk__in=list(ids)).order_by("id"))
    if len(found) != len(set(ids)):
        raise NotFound(f"Version {version.number} of {version.task.slug!r} has no such proposed test.")
    return found


def version_proposals_accept(*, actor: Any, version: TaskVersion, ids: Sequence[int] | None = None) -> AcceptResult:
    """Accept proposals of `version` (all still proposed when `ids` is None)."""
    _require_curator(actor)
    chosen = _of_version(version, ids)
    if not chosen:
        raise ValidationFailed("No proposed tests to accept.", details={"proposal": ["None is still proposed."]})
    return proposed_tests_accept(actor=actor, proposals=chosen)


def version_proposals_dismiss(*, actor: Any, version: TaskVersion, ids: Sequence[int]) -> int:
    _require_curator(actor)
    return proposed_tests_dismiss(actor=actor, proposals=_of_version(version, ids))


@dataclass(frozen=True)
class TaskAcceptance:
    """What "Accept proposed tests" did to one task: `accepted` tests went into
    `version`, or nothing happened, for `reason`."""

    task: str
    accepted: int = 0
    version: TaskVersion | None = None
    reason: str = ""

    def sentence(self) -> str:
        if self.version is not None:
            return f"{self.task}: accepted {self.accepted} → v{self.version.number}"
        return f"{self.task}: skipped, {self.reason}"


def proposed_tests_accept_for_tasks(*, actor: Any, slugs: Sequence[str]) -> list[TaskAcceptance]:
    """For each task named, accept every test its latest version's newest verification
    still proposes, as one new version; report each task's outcome in the order named.
    A task that fails (a stale proposal, a retired task) is skipped with the reason and
    leaves the others as they are."""
    _require_curator(actor)
    names = list(dict.fromkeys(s for s in slugs if isinstance(s, str)))
    if not names:
        raise ValidationFailed("Select at least one task.", details={"task": ["Select at least one task."]})
    if len(names) > MAX_TASKS:
        raise ValidationFailed(f"At most {MAX_TASKS} tasks at once.", details={"task": [f"At most {MAX_TASKS}."]})
    tasks = {t.slug: t for t in Task.objects.filter(slug__in=names)}
    pending = pending_proposals(list(tasks.values()))
    outcomes = []
    for slug in names:
        task = tasks.get(slug)
        if task is None:
            outcomes.append(TaskAcceptance(slug, reason="no such task"))
            continue
        chosen = pending.get(task.pk) or []
        if not chosen:
            outcomes.append(TaskAcceptance(slug, reason="its latest verification proposes no tests"))
            continue
        result = proposed_tests_accept(actor=actor, proposals=chosen)
        if result.versions:
            outcomes.append(TaskAcceptance(slug, accepted=result.accepted, version=result.versions[0]))
        else:
            reason = result.skipped[0]["reason"] if result.skipped else "nothing to accept"
            outcomes.append(TaskAcceptance(slug, reason=reason))
    return outcomes
