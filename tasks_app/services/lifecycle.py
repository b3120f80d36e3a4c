"""The review lifecycle: draft -> submitted -> verified | flagged -> approved | rejected,
retired from anywhere, with permission checks, four eyes and an audit trail."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from tasks_app.errors import InvalidTransition, PermissionDenied, ValidationFailed
from tasks_app.models import State, Task, TaskVersion, Transition
from tasks_app.roles import ADMIN, CURATOR, REVIEWER, has_role
from tasks_app.signals import version_submitted

MAX_NOTE = 4000

# to_state -> the states it may be reached from.
ALLOWED_FROM: dict[str, tuple[str, ...]] = {
    State.SUBMITTED: (State.DRAFT,),
    # withdraw, restore, and a reviewer's "request changes" on a verified or flagged version
    State.DRAFT: (State.SUBMITTED, State.RETIRED, State.VERIFIED, State.FLAGGED),
    State.VERIFIED: (State.SUBMITTED,),
    State.FLAGGED: (State.SUBMITTED,),
    State.APPROVED: (State.VERIFIED, State.FLAGGED),
    State.REJECTED: (State.VERIFIED, State.FLAGGED),
    State.RETIRED: (State.DRAFT, State.SUBMITTED, State.VERIFIED, State.FLAGGED, State.APPROVED, State.REJECTED),
}


def allowed_targets(state: str) -> list[str]:
    return [to for to, sources in ALLOWED_FROM.items() if state in sources]


def unreviewed_authors(task: Task) -> set[int]:
    """Ids of everyone who authored a version since the last approved one: the
    change under review. None of them may approve or reject it."""
    versions = TaskVersion.objects.filter(task=task)
    if task.approved_version_id:
        approved_number = TaskVersion.objects.filter(pk=task.approved_version_id).values_list("number", flat=True)
        versions = versions.filter(number__gt=approved_number[0])
    return set(versions.values_list("author_id", flat=True))


def unreviewed_authors_by_task(tasks: list[Task]) -> dict[int, set[int]]:
    """`unreviewed_authors` for many tasks in one query (a review queue page)."""
    approved = dict(Task.objects.filter(pk__in=[t.pk for t in tasks]).values_list("pk", "approved_version__number"))
    authors: dict[int, set[int]] = {t.pk: set() for t in tasks}
    rows = TaskVersion.objects.filter(task__in=list(authors)).values_list("task_id", "number", "author_id")
    for task_id, number, author_id in rows:
        if number > (approved.get(task_id) or 0):
            authors[task_id].add(author_id)
    return authors


def can_review(actor: Any, task: Task) -> bool:
    return has_role(actor, REVIEWER) and actor.pk not in unreviewed_authors(task)


def _check_permission(actor: Any, task: Task, to_state: str) -> None:
    """Raise PermissionDenied unless `actor` may move `task` to `to_state`.

    `actor` None is the verification pipeline acting as the system.
    """
    if to_state in (State.VERIFIED, State.FLAGGED):
        if actor is not None and not has_role(actor, ADMIN):
            raise PermissionDenied("Only the verification pipeline (or an admin) marks a task verified or flagged.")
        return
    if actor is None:
        raise PermissionDenied("The system may only mark tasks verified or flagged.")
    if to_state in (State.APPROVED, State.REJECTED) or (
        to_state == State.DRAFT and task.state in (State.VERIFIED, State.FLAGGED)
    ):
        if not has_role(actor, REVIEWER):
            raise PermissionDenied("Only reviewers approve, reject or request changes.")
        if actor.pk in unreviewed_authors(task):
            raise PermissionDenied(
                "Four eyes: you authored a version under review, so another reviewer must decide.",
                code="four_eyes",
            )
        return
    if to_state == State.RETIRED:
        if task.owner_id != actor.pk and not has_role(actor, REVIEWER):
            raise PermissionDenied("Only the task's owner, a reviewer or an admin can retire it.")
        return
    if to_state == State.DRAFT and task.state == State.RETIRED:
        if task.owner_id != actor.pk and not has_role(actor, ADMIN):
            raise PermissionDenied("Only the task's owner or an admin can restore a retired task.")
        return
    if not has_role(actor, CURATOR):
        raise PermissionDenied("Only curators submit or withdraw tasks.")


def _check_preconditions(task: Task, to_state: str, note: str) -> None:
    version = task.latest_version
    if to_state == State.SUBMITTED and (version is None or not version.solutions.filter(role="reference").exists()):
        raise ValidationFailed(
            "A task needs a reference solution before it can be submitted.",
            details={"solutions": ["Add at least one solution with role 'reference'."]},
            code="missing_reference",
        )
    if to_state == State.REJECTED and not note.strip():
        raise ValidationFailed(
            "Say why the task is rejected.", details={"note": ["A note is required to reject."]}, code="note_required"
        )
    if to_state == State.APPROVED and task.state == State.FLAGGED and not note.strip():
        raise ValidationFailed(
            "Approving a flagged task waives its flags: say why they are acceptable.",
            details={"note": ["A waiver note is required to approve a flagged task."]},
            code="waiver_required",
        )
    if to_state == State.DRAFT and task.state in (State.VERIFIED, State.FLAGGED) and not note.strip():
        raise ValidationFailed(
            "Say what should change.",
            details={"note": ["A note is required to request changes."]},
            code="note_required",
        )


@transaction.atomic
def task_transition(*, actor: Any, task: Task, to_state: str, note: str = "") -> Transition:
    """Move `task` to `to_state`.

    Steps: lock the task row; check the move is allowed from the current
    state (409 otherwise); check the actor's role and four eyes (403); check
    preconditions (400); update the state with a conditional write; append
    the audit record.

    It works on its own locked copy of the task: read the new state from the
    returned transition's `task`, not from the caller's object.
    """
    if to_state not in State.values:
        raise ValidationFailed(
            f"Unknown state {to_state!r}.", details={"to_state": [f"One of: {', '.join(State.values)}."]}
        )
    if not isinstance(note, str) or len(note) > MAX_NOTE or "\x00" in note:
        raise ValidationFailed("Invalid note.", details={"note": [f"A string of at most {MAX_NOTE} characters."]})
    task = Task.objects.select_for_update(of=("self",)).select_related("latest_version").get(pk=task.pk)
    from_state = task.state
    if from_state not in ALLOWED_FROM[to_state]:
        allowed = ", ".join(allowed_targets(from_state)) or "none"
        raise InvalidTransition(
            f"A task in state {from_state!r} cannot move to {to_state!r}. Allowed from {from_state!r}: {allowed}.",
            details={"from_state": from_state, "to_state": to_state, "allowed": allowed_targets(from_state)},
        )
    _check_permission(actor, task, to_state)
    _check_preconditions(task, to_state, note)

    changes: dict[str, Any] = {"state": to_state, "updated_at": timezone.now()}
    if to_state == State.APPROVED:
        changes["approved_version"] = task.latest_version
    updated = Task.objects.filter(pk=task.pk, state=from_state).update(**changes)
    if updated != 1:  # cannot happen under the row lock; kept as the invariant's guard
        raise InvalidTransition("The task changed state while this transition was applied; try again.")
    for name, value in changes.items():
        setattr(task, name, value)
    if to_state == State.SUBMITTED and task.latest_version_id:
        version_id, actor_id = task.latest_version_id, getattr(actor, "pk", None)
        # On commit: a worker must find the submitted state, and a rollback sends nothing.
        transaction.on_commit(
            lambda: version_submitted.send(sender=TaskVersion, version_id=version_id, actor_id=actor_id)
        )
    return Transition.objects.create(
        task=task, version=task.latest_version, actor=actor, from_state=from_state, to_state=to_state, note=note.strip()
    )


def task_submit(*, actor: Any, task: Task, note: str = "") -> Transition:
    return task_transition(actor=actor, task=task, to_state=State.SUBMITTED, note=note)


def task_withdraw(*, actor: Any, task: Task, note: str = "") -> Transition:
    if task.state != State.SUBMITTED:
        raise InvalidTransition(f"Only a submitted task can be withdrawn; this one is {task.state!r}.")
    return task_transition(actor=actor, task=task, to_state=State.DRAFT, note=note)


def task_approve(*, actor: Any, task: Task, note: str = "") -> Transition:
    return task_transition(actor=actor, task=task, to_state=State.APPROVED, note=note)


def task_reject(*, actor: Any, task: Task, note: str) -> Transition:
    return task_transition(actor=actor, task=task, to_state=State.REJECTED, note=note)


def task_retire(*, actor: Any, task: Task, note: str = "") -> Transition:
    return task_transition(actor=actor, task=task, to_state=State.RETIRED, note=note)


def task_restore(*, actor: Any, task: Task, note: str = "") -> Transition:
    if task.state != State.RETIRED:
        raise InvalidTransition(f"Only a retired task can be restored; this one is {task.state!r}.")
    return task_transition(actor=actor, task=task, to_state=State.DRAFT, note=note)
