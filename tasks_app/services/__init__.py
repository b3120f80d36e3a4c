"""Writes. Every change to tasks goes through a function here (DESIGN.md)."""

from tasks_app.services.blobs import blobs_store
from tasks_app.services.bulk import BulkResult, tasks_bulk_tag, tasks_bulk_transition
from tasks_app.services.lifecycle import (
    task_approve,
    task_reject,
    task_restore,
    task_retire,
    task_submit,
    task_transition,
    task_withdraw,
)
from tasks_app.services.repository import ArchiveResult, task_archive_import
from tasks_app.services.tokens import api_token_create, api_token_revoke
from tasks_app.services.versions import VersionResult, task_create, task_update_details, task_version_create

__all__ = [
    "ArchiveResult",
    "BulkResult",
    "VersionResult",
    "api_token_create",
    "api_token_revoke",
    "blobs_store",
    "task_approve",
    "task_archive_import",
    "task_create",
    "task_reject",
    "task_restore",
    "task_retire",
    "task_submit",
    "task_transition",
    "task_update_details",
    "task_version_create",
    "task_withdraw",
    "tasks_bulk_tag",
    "tasks_bulk_transition",
]
