"""The verification pipeline on real Celery workers, a real Redis broker and the
real PostgreSQL test database: two hosts share a verification, a worker killed
mid-verification loses nothing and duplicates nothing, and a sandbox backend
that is down ends in an infrastructure error that a later run clears.

How it is wired:
- Workers are `celery -A config worker -Q celery,sandbox --concurrency 1 -n NAME`
  subprocesses (tests/evaluation/workers.py), each in a session of its own so
  that stopping or killing one signals its own process group only. Their
  environment points them at Redis database 5 (CELERY_BROKER_URL), at
  pytest-django's test database (DATABASE_URL, built inside the test from
  `connection.settings_dict`, since its name is only known once it exists), at the
  bwrap backend, and at a visibility timeout of 15 s.
- This process only enqueues. Its Django settings, and so `config.celery.app.conf`,
  were read at start-up with the run's environment (a filesystem broker), so
  setting CELERY_BROKER_URL in a test changes nothing: `producer_on()` sets
  `app.conf.broker_url` and drops the connection and producer pools the app
  caches, and puts both back afterwards.
- `transaction=True`: the workers must see the rows this process writes, and
  this process the rows they write. Only Redis database 5 is flushed, before
  and after each test.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evaluation.models import Execution, Flag, Verification, VerificationState
from evaluation.sandbox.types import FINAL
from evaluation.tasks import verify_version
from tasks_app.models import State
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap
from .samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS
from .workers import (
    WorkerPool,
    unacked_task_ids,
    wait_for,
)

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

VERDICTS = set(FINAL) - {"sandbox_error"}
# Wrong and slow: each run takes over a second, so a worker can be caught in the middle of one.
SLOW_NO_UPPER_BOUND = "import time\ntime.sleep(1.2)\n\n\ndef clamp(x, low, high):\n    return max(low, x)\n"


def _submitted_clamp(owner: Any, *, slug: str, adversarial: str = NO_UPPER_BOUND) -> Any:
    task = make_task(
        owner=owner,
        slug=slug,
        title="Clamp",
        entry_point="clamp",
        statement="Clamp x into [low, high].",
        starter_code="def clamp(x, low, high):\n    ...\n",
        visible_tests=["assert clamp(3, 0, 10) == 3"],
        hidden_tests=STRONG_CLAMP_TESTS,
        solutions=[
            {"role": "reference", "label": "ref", "code": CLAMP},
            {"role": "adversarial", "label": "no-upper-bound", "code": adversarial},
        ],
        time_limit_s=2,
    )
    task_submit(actor=owner, task=task)
    task.refresh_from_db()
    assert task.state == State.SUBMITTED
    return task


def _verification(version_pk: int) -> Verification | None:
    return Verification.objects.filter(version_id=version_pk).first()


def _statuses(verification: Verification) -> Counter:
    return Counter(verification.executions.values_list("status", flat=True))


def _wait(workers: WorkerPool, condition: Any, *, timeout: float, what: str) -> Any:
    try:
        return wait_for(condition, timeout=timeout, what=what)
    except AssertionError as exc:
        states = [(v.pk, v.state, v.done, v.total, dict(_statuses(v))) for v in Verification.objects.all()]
        raise AssertionError(f"{exc}\nverifications: {states}\n{workers.logs()}") from None


def _wait_state(workers: WorkerPool, version_pk: int, state: str, *, timeout: float) -> Verification:
    def reached() -> Verification | None:
        verification = _verification(version_pk)
        return verification if verification is not None and verification.state == state else None

    return _wait(workers, reached, timeout=timeout, what=f"the verification to be {state}")


def _assert_complete_and_unique(verification: Verification) -> list[Execution]:
    executions = list(verification.executions.all())
    assert verification.total > 0 and len(executions) == verification.total
    assert len({e.key for e in executions}) == verification.total
    assert {e.status for e in executions} <= VERDICTS, _statuses(verification)
    assert verification.done == verification.total
    return executions


def test_two_workers_on_two_hosts_share_one_verification(curator, workers):
    started = time.monotonic()
    workers.start("w1@host-a", "w2@host-b")
    ready_s = time.monotonic() - started
    task = _submitted_clamp(curator, slug="shared")

    verify_version.delay(task.latest_version_id)
    verification = _wait_state(workers, task.latest_version_id, VerificationState.DONE, timeout=120)
    run_s = time.monotonic() - started - ready_s

    executions = _assert_complete_and_unique(verification)
    by_worker = Counter(e.worker for e in executions)
    assert set(by_worker) == {"w1@host-a", "w2@host-b"}, by_worker
    assert all(e.attempts == 1 for e in executions)  # nothing ran twice
    assert Verification.objects.filter(version_id=task.latest_version_id).count() == 1
    assert verification.verdict == "verified"
    task.refresh_from_db()
    assert task.state == State.VERIFIED
    print(f"\n[two hosts] ready {ready_s:.1f} s, {verification.total} executions in {run_s:.1f} s, {dict(by_worker)}")


def test_a_worker_killed_mid_verification_loses_and_duplicates_nothing(curator, workers):
    """SIGKILL worker 1's process group while it runs an execution; worker 2 goes on.

    The dead worker's message stays unacknowledged in Redis (acks_late) and its
    execution stays claimed ("running"). Kombu brings the message back at its
    restore sweep (every unacked_restore_interval x unacked_restore_throttle,
    here 1 x 1 s past a 15 s visibility timeout); worker 2 then finds the claim
    held, looks again once it is stale (VERIFY_STALE_AFTER_S past the time limit,
    here 3 s), and runs it. No clock is moved: the verification finishes by itself.
    """
    started = time.monotonic()
    w1, _w2 = workers.start(
        "w1@host-a", "w2@host-b", VERIFY_REPEATS="5", VERIFY_MUTANTS="30", VERIFY_STALE_AFTER_S="3",
        CELERY_UNACKED_RESTORE_INTERVAL="1", CELERY_UNACKED_RESTORE_THROTTLE="1",
    )  # fmt: skip
    task = _submitted_clamp(curator, slug="killed", adversarial=SLOW_NO_UPPER_BOUND)
    version_pk = task.latest_version_id
    verify_version.delay(version_pk)

    def w1_mid_run() -> list[int]:
        """Worker 1 has finished a run and has just started a slow one (so it is still in it)."""
        verification = _verification(version_pk)
        if verification is None or verification.done < 2:
            return []
        w1_runs = verification.executions.filter(worker=w1.name)
        if not w1_runs.filter(status__in=VERDICTS).exists():
            return []
        just_started = timezone.now() - timedelta(seconds=0.6)
        running = w1_runs.filter(status="running", role="adversarial", started_at__gt=just_started)
        return list(running.values_list("pk", flat=True))

    claimed = _wait(workers, w1_mid_run, timeout=90, what="worker 1 to be in the middle of a run")
    w1.kill()
    killed_at = time.monotonic()
    verification = _verification(version_pk)
    done_at_kill = verification.done
    assert 2 <= done_at_kill < verification.total
    finished_by_w1 = dict(
        verification.executions.filter(worker=w1.name, status__in=VERDICTS).values_list("pk", "status")
    )
    held = Execution.objects.filter(pk__in=claimed, status="running", worker=w1.name)
    assert held.count() == len(claimed), "the run finished before the kill: nothing was interrupted"
    # acks_late: the dead worker acknowledged nothing, so the broker still holds its message.
    assert f"({claimed[0]},)" in unacked_task_ids("evaluation.run_execution")

    verification = _wait_state(workers, version_pk, VerificationState.DONE, timeout=90)
    drained_s = time.monotonic() - killed_at

    executions = _assert_complete_and_unique(verification)
    rerun = [e for e in executions if e.pk in claimed]
    assert all(e.attempts == 2 and e.worker == "w2@host-b" for e in rerun), [(e.attempts, e.worker) for e in rerun]
    assert all(e.attempts == 1 for e in executions if e.pk not in claimed)  # nothing else ran twice
    # What the dead worker finished before it died is kept, not run again.
    assert finished_by_w1
    kept = {e.pk: e.status for e in executions if e.worker == w1.name and e.attempts == 1}
    assert kept == finished_by_w1
    by_worker = Counter(e.worker for e in executions)
    task.refresh_from_db()
    assert task.state in (State.VERIFIED, State.FLAGGED)
    print(
        f"\n[kill] {verification.total} executions, killed at done={done_at_kill} "
        f"({killed_at - started:.1f} s in), worker 2 drained the rest in {drained_s:.1f} s, "
        f"finished {time.monotonic() - killed_at:.1f} s after the kill, {dict(by_worker)}"
    )


def test_a_sandbox_backend_that_is_down_is_an_infrastructure_error_and_a_later_run_clears_it(curator, workers):
    started = time.monotonic()
    broken = workers.start("w1@host-a", "w2@host-b", SANDBOX_PYTHON="/nonexistent/python3")
    task = _submitted_clamp(curator, slug="no-sandbox")
    version_pk = task.latest_version_id
    verify_version.delay(version_pk)

    failed = _wait_state(workers, version_pk, VerificationState.INFRASTRUCTURE_ERROR, timeout=90)
    failed_s = time.monotonic() - started
    statuses = _statuses(failed)
    assert not set(statuses) & VERDICTS, statuses  # never a verdict on the task's programs
    assert statuses["sandbox_error"] >= 1
    message = failed.executions.filter(status="sandbox_error").first().result["message"]
    assert "start_failed" in message, message
    assert not Flag.objects.filter(verification=failed).exists()
    task.refresh_from_db()
    assert task.state == State.SUBMITTED

    stopping = time.monotonic()
    warm = workers.stop(*broken)
    restarted = time.monotonic()
    workers.start("w3@host-a", "w4@host-b")
    ready_s = time.monotonic() - restarted
    verify_version.delay(version_pk)
    verification = _wait_state(workers, version_pk, VerificationState.DONE, timeout=120)
    recovered_s = time.monotonic() - restarted

    assert verification.pk == failed.pk
    executions = _assert_complete_and_unique(verification)
    assert {e.worker for e in executions} <= {"w3@host-a", "w4@host-b"}
    assert not verification.flags.filter(severity="error").exists()
    assert verification.verdict == "verified"
    task.refresh_from_db()
    assert task.state == State.VERIFIED
    print(
        f"\n[backend down] infrastructure_error after {failed_s:.1f} s "
        f"({dict(statuses)}); stopping the broken workers took {restarted - stopping:.1f} s "
        f"({'warm' if warm else 'killed after 30 s'}); fresh ones ready in "
        f"{ready_s:.1f} s; done {recovered_s:.1f} s after they were started"
    )


def test_rollouts_run_on_a_worker_and_a_refit_follows_once_they_have(curator, workers):
    """A samples file's attempts go to the sandbox queue; when the last has run, the
    worker that ran it enqueues the difficulty refit, which runs too."""
    import json

    from evaluation.difficulty.rollouts import samples_ingest, upload_todo
    from evaluation.models import Attempt, DifficultyFit
    from evaluation.tasks import enqueue_attempts

    make_task(owner=curator, slug="add-two")
    make_task(owner=curator, slug="add-three", title="Again")
    lines = [{"task_id": t, "completion": c} for t in ("add-two", "add-three")
             for c in ("    return a + b\n", "    return a - b\n", "    return a + b\n", "    return b + a\n",
                       "    return 0\n", "    return a + b\n")]  # fmt: skip
    upload = samples_ingest(data="\n".join(json.dumps(x) for x in lines).encode(), solver="policy").upload
    workers.start("rollouts@host", DIFFICULTY_BOOTSTRAP="5")
    enqueue_attempts(upload.pk, upload_todo(upload))

    fit = _wait(workers, lambda: DifficultyFit.objects.filter(state="done").first(), timeout=120,
                what="the refit after the rollouts")  # fmt: skip
    assert Counter(Attempt.objects.values_list("status", flat=True)) == {"passed": 8, "failed": 4}
    assert set(Attempt.objects.values_list("worker", flat=True)) == {"rollouts@host"}
    upload.refresh_from_db()
    assert upload.done == 12 and upload.finished_at is not None
    assert fit.attempts == 12 and fit.tasks == 2 and fit.params["bootstrap"] == 5
