"""Celery tasks of the trainer bridge: thin wrappers around the services.

Export builds run on the default queue (they need the database and a disk, no
sandbox). Each is idempotent and acks late: a worker killed mid-build leaves
its message to be delivered again, and the build is claimed again once stale.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import transaction

from tasks_app.errors import NotFound
from trainer_bridge.services.builds import build_run


@shared_task(name="trainer_bridge.build_export", acks_late=True, reject_on_worker_lost=True)
def build_export(build_id: str) -> str:
    """Write one export build's file; its state afterwards (done, failed, or the state
    another worker holds it in)."""
    try:
        return build_run(build_id=build_id).state
    except NotFound:
        return "gone"  # its snapshot was deleted (the build with it) before a worker got to it


def enqueue_build(build: Any) -> None:
    """Queue `build` for a worker once the current transaction commits, so the worker
    finds its row."""
    build_id = str(build.pk)
    transaction.on_commit(lambda: build_export.delay(build_id))
