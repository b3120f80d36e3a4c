"""Which lifecycle buttons to show a user for a task.

This only decides what to offer; services.task_transition decides what is
allowed, so a stale page or a forged POST is still refused there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tasks_app.models import State, Task
from tasks_app.roles import ADMIN, CURATOR, REVIEWER, has_role
from tasks_app.services.lifecycle import allowed_targets, can_review


@dataclass(frozen=True)
class Action:
    to_state: str
    label: str
    style: str = ""  # "primary" or "danger" for the button's look


@dataclass(frozen=True)
class TaskActions:
    general: list[Action]
    # "decide": Approve/Reject buttons; "four_eyes": the user authored the change
    # under review; "": the task is not waiting for this user's review.
    review: str


def task_actions(user: Any, task: Task) -> TaskActions:
    targets = allowed_targets(task.state)
    general: list[Action] = []
    is_owner = task.owner_id == user.pk
    if State.SUBMITTED in targets and has_role(user, CURATOR):
        general.append(Action(State.SUBMITTED, "Submit for review", "primary"))
    if State.DRAFT in targets:
        if task.state == State.SUBMITTED and has_role(user, CURATOR):
            general.append(Action(State.DRAFT, "Withdraw"))
        elif task.state == State.RETIRED and (is_owner or has_role(user, ADMIN)):
            general.append(Action(State.DRAFT, "Restore"))
    if State.RETIRED in targets and (is_owner or has_role(user, REVIEWER)):
        general.append(Action(State.RETIRED, "Retire", "danger"))
    review = ""
    if State.APPROVED in targets and has_role(user, REVIEWER):
        review = "decide" if can_review(user, task) else "four_eyes"
    return TaskActions(general=general, review=review)
