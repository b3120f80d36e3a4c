"""Helpers for the curator UI suites: logged-in clients, form data, tasks in a given state."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tasks_app.models import State
from tasks_app.services import task_submit, task_transition
from tests.factories import make_task


@pytest.fixture
def client_for() -> Any:
    """client_for(user) -> a Django test Client logged in as `user` (test_security checks CSRF)."""

    def build(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return build


def form_data(**overrides: Any) -> dict[str, str]:
    """What the create form posts for a valid assertions task, with overrides."""
    data = {
        "slug": "add-two",
        "title": "Add two numbers",
        "tags": "arithmetic, basics",
        "statement": "Return the sum of `a` and `b`.",
        "entry_point": "add",
        "suite_kind": "assertions",
        "starter_code": "def add(a, b):\n    ...\n",
        "test_setup": "",
        "visible_tests": "assert add(1, 2) == 3",
        "hidden_tests": "assert add(-1, 1) == 0\n\nassert add(10, 5) == 15\n",
        "solutions-0-role": "reference",
        "solutions-0-label": "ref",
        "solutions-0-code": "def add(a, b):\n    return a + b\n",
        "solutions-0-note": "",
        "solutions-1-role": "adversarial",
        "solutions-1-label": "off-by-one",
        "solutions-1-code": "def add(a, b):\n    return a + b + 1\n",
        "solutions-1-note": "Always one too many.",
        "solutions-2-role": "adversarial",
        "solutions-2-label": "",
        "solutions-2-code": "",
        "solutions-2-note": "",
        "time_limit_s": "5",
        "memory_limit_mb": "128",
        "changelog": "First draft.",
    }
    data.update(overrides)
    return data


def in_review(*, owner: Any, state: str = State.VERIFIED, **kwargs: Any) -> Any:
    """A task the pipeline has verified (or flagged): waiting for a reviewer."""
    task = make_task(owner=owner, **kwargs)
    task_submit(actor=owner, task=task)
    task_transition(actor=None, task=task, to_state=state)
    task.refresh_from_db()
    return task
