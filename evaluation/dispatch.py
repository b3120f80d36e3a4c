"""Sending Celery tasks by their registered names ("evaluation.verify_version"), so a
service can ask for work without importing `evaluation.tasks`, which imports the
services it wraps (the cycle services -> tasks -> services).

A name is looked up in the Celery app's registry and the task is sent through its own
`apply_async`: the same message as `task.delay()` or `task.apply_async()` would send,
routed by name (CELERY_TASK_ROUTES; an explicit `queue` still wins) with the task's
options and argument checks. A worker imports every installed app's `tasks` module as
it starts; a web process imports them here on the first name it does not know (Celery's
autodiscovery, as the worker does). A name that nothing registers is refused at once
with UnknownTask, never sent where no worker would take it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celery import Task, current_app
from celery.result import AsyncResult
from django.db import transaction


class UnknownTask(LookupError):
    """No Celery task is registered under the name asked for."""


def task_named(name: str) -> Task:
    """The registered task called `name`; UnknownTask if none is, even after
    discovering the task modules of every installed app."""
    app = current_app._get_current_object()
    if name not in app.tasks:
        app.autodiscover_tasks(force=True)  # each installed app's tasks module, as a worker imports them
    try:
        return app.tasks[name]
    except KeyError:
        known = sorted(n for n in app.tasks if not n.startswith("celery."))
        raise UnknownTask(
            f"no Celery task is registered as {name!r}: nothing was sent (registered: {', '.join(known)})"
        ) from None


def delay(name: str, *args: Any, **kwargs: Any) -> AsyncResult:
    """Send the task called `name` with these arguments, as `task.delay(*args, **kwargs)`."""
    return task_named(name).apply_async(args, kwargs)


def apply_async(
    name: str, args: tuple | list = (), kwargs: dict[str, Any] | None = None, **options: Any
) -> AsyncResult:
    """Send the task called `name`, as `task.apply_async(args, kwargs, **options)` (queue,
    countdown, priority ...)."""
    return task_named(name).apply_async(tuple(args), kwargs or {}, **options)


def delay_on_commit(name: str, *args: Any, **kwargs: Any) -> None:
    """Send the task called `name` once the current transaction commits (at once outside
    one). The name is looked up now, so an unknown one fails in the caller's transaction,
    not after it has committed."""
    delay_each_on_commit(name, [(args, kwargs)])


def delay_each_on_commit(name: str, calls: Iterable[tuple[tuple, dict[str, Any]]]) -> None:
    """Send the task called `name` once for each (args, kwargs) of `calls`, in order, all
    from one callback once the current transaction commits (as delay_on_commit)."""
    task = task_named(name)
    calls = list(calls)
    transaction.on_commit(lambda: [task.apply_async(args, kwargs) for args, kwargs in calls])
