"""A sandbox worker run as docs/deployment.md says (`--pool threads`: task threads
sharing one warm sandbox pool) verifies a task as the prefork workers do: every
execution once, the same verdict. The wiring is test_celery_workers.py's."""

from __future__ import annotations

from collections import Counter

import pytest

from evaluation.models import Verification, VerificationState
from evaluation.tasks import verify_version
from tasks_app.models import State

from .conftest import needs_bwrap
from .test_celery_workers import _assert_complete_and_unique, _submitted_clamp, _wait_state

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]


def test_a_thread_pool_worker_verifies_a_task(curator, workers):
    workers.start("threads@host-a", pool="threads")
    task = _submitted_clamp(curator, slug="threaded")
    verify_version.delay(task.latest_version_id)
    verification = _wait_state(workers, task.latest_version_id, VerificationState.DONE, timeout=120)
    executions = _assert_complete_and_unique(verification)
    assert Counter(e.worker for e in executions) == {"threads@host-a": len(executions)}
    assert all(e.attempts == 1 for e in executions)
    assert Verification.objects.filter(version_id=task.latest_version_id).count() == 1
    assert verification.verdict == "verified"
    task.refresh_from_db()
    assert task.state == State.VERIFIED
