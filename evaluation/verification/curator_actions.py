"""What people ask of the pipeline: verify a version again, mark a mutant equivalent."""

from __future__ import annotations

import re
from typing import Any

from evaluation import dispatch
from evaluation.models import Execution, MutantEquivalence
from tasks_app.errors import NotFound, PermissionDenied, ValidationFailed
from tasks_app.models import Task, TaskVersion
from tasks_app.roles import CURATOR, REVIEWER, has_role

DIGEST = re.compile(r"^[0-9a-f]{64}$")
MAX_NOTE = 2000


def verification_request(*, actor: Any, version: TaskVersion, force: bool = False) -> None:
    """Queue a verification of `version` (after this transaction commits)."""
    if not has_role(actor, CURATOR, REVIEWER):
        raise PermissionDenied("Only curators and reviewers start verifications.")
    dispatch.delay_on_commit("evaluation.verify_version", version.pk, force=force, requested_by_id=actor.pk)


def mutant_mark_equivalent(*, actor: Any, task: Task, mutant_digest: str, note: str = "") -> MutantEquivalence:
    """Record that a surviving mutant behaves like the reference, so it leaves the
    mutation score. Who, when and why are kept on the row (the audit)."""
    if not has_role(actor, CURATOR, REVIEWER):
        raise PermissionDenied("Only curators and reviewers mark mutants equivalent.")
    if not isinstance(mutant_digest, str) or not DIGEST.match(mutant_digest):
        raise ValidationFailed("Not a mutant id.", details={"mutant": ["Expected the mutant's 64-hex-digit id."]})
    if not isinstance(note, str) or len(note) > MAX_NOTE or "\x00" in note:
        raise ValidationFailed("Invalid note.", details={"note": [f"A string of at most {MAX_NOTE} characters."]})
    if not Execution.objects.filter(verification__version__task=task, role="mutant", subject=mutant_digest).exists():
        raise NotFound(f"Task {task.slug!r} has no mutant {mutant_digest[:12]}.")
    mark, _ = MutantEquivalence.objects.get_or_create(
        task=task, mutant_digest=mutant_digest, defaults={"marked_by": actor, "note": note.strip()}
    )
    return mark


def verifications_request_many(*, actor: Any, tasks: Any) -> int:
    """Queue a verification of the latest version of each task (retired ones left
    out), after this transaction commits. Returns how many were queued."""
    if not has_role(actor, CURATOR, REVIEWER):
        raise PermissionDenied("Only curators and reviewers start verifications.")
    ids = list(tasks.exclude(state="retired").exclude(latest_version=None).values_list("latest_version_id", flat=True))
    dispatch.delay_each_on_commit("evaluation.verify_version", [((i,), {"requested_by_id": actor.pk}) for i in ids])
    return len(ids)
