"""A worker whose sandbox backend is missing (no bwrap on its PATH) on a real Celery
worker and Redis broker: its runs end as sandbox_error, never as a verdict, wait
30 s and more before each new try instead of a few seconds, and the worker says why
in one log line, not one a run."""

from __future__ import annotations

import re
import time

import pytest

from evaluation.models import Execution, VerificationState
from evaluation.tasks import backend_missing_wait_s, verify_version
from tasks_app.services import task_submit
from tests.factories import make_task

from .samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS
from .workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
QUIET_S = 12.0  # the backoff's first tries come within 5 s (jittered), its next within 10 s


def test_a_worker_without_bwrap_waits_between_tries_and_says_why_once(curator, workers, tmp_path):
    (tmp_path / "empty-bin").mkdir()
    (worker,) = workers.start("w1@bare-host", PATH=str(tmp_path / "empty-bin"))  # bwrap is found on the PATH
    task = make_task(
        owner=curator, slug="no-bwrap", title="Clamp", entry_point="clamp", statement="Clamp x into [low, high].",
        starter_code="def clamp(x, low, high):\n    ...\n", visible_tests=["assert clamp(3, 0, 10) == 3"],
        hidden_tests=STRONG_CLAMP_TESTS, time_limit_s=2,
        solutions=[{"role": "reference", "label": "ref", "code": CLAMP},
                   {"role": "adversarial", "label": "no-upper-bound", "code": NO_UPPER_BOUND}],
    )  # fmt: skip
    task_submit(actor=curator, task=task)
    verify_version.delay(task.latest_version_id)

    def all_tried() -> list[Execution] | None:
        rows = list(Execution.objects.filter(verification__version_id=task.latest_version_id))
        return rows if rows and all(row.status == "sandbox_error" for row in rows) else None

    try:
        tried = wait_for(all_tried, timeout=90, what="every execution to be tried once")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{workers.logs()}") from None
    assert {row.result["anomaly"] for row in tried} == {"backend_missing"}
    time.sleep(QUIET_S)

    rows = list(Execution.objects.filter(verification__version_id=task.latest_version_id))
    assert {row.status for row in rows} == {"sandbox_error"}  # never a verdict on the task's programs
    attempts = sorted(row.attempts for row in rows)
    assert attempts[-1] == 1, f"tried again within {QUIET_S:.0f} s: {attempts}\n{workers.logs()}"
    assert rows[0].verification.state == VerificationState.INFRASTRUCTURE_ERROR
    log = worker.log()
    said = re.findall(r"the bwrap sandbox backend is missing on this worker \(([^)]*)", log)
    assert len(said) == 1, f"{len(said)} lines say why, for {len(rows)} runs:\n{log[-4000:]}"
    assert "bubblewrap (bwrap) is not installed" in log
    assert log.count(f"Retry in {backend_missing_wait_s(0)}s") == len(rows), log[-4000:]
    assert [backend_missing_wait_s(n) for n in range(6)] == [30, 60, 120, 240, 300, 300]
