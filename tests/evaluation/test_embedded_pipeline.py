"""The embedded pipeline (`make run`): a verification's executions go to the worker in
chunks, and the filesystem broker is looked at often, not once a second.

Under `make run` a worker of two slots took about two messages a second: kombu's
filesystem transport sleeps its polling interval (1 s by default) whenever the
worker's slots are full, and each message carried one execution of ~20 ms. These
tests check the structure that makes it fast, not a speed (bench/verify.py measures
that, as embedded_pipeline_over_sync):
- the settings `make run` runs on give the transport a polling interval of 10 ms;
- `make run`'s own worker (platform/scripts/worker.sh) on the filesystem broker and
  an SQLite file under a var/ of its own verifies the sample catalogue's submitted
  tasks with one sandbox message per chunk of executions, not one per execution;
- chunks stay idempotent: a chunk delivered again runs nothing twice, a chunk whose
  executions another worker holds leaves them to it and looks again, and (with
  Redis, real workers) a worker killed mid-chunk loses and duplicates nothing.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from evaluation.models import Execution, Verification, VerificationState
from evaluation.tasks import verify_version
from evaluation.verification.config import VerifyConfig
from evaluation.verification.execution_chunks import (
    CHUNK_WALL_S,
    chunk_size_for,
    execution_chunks,
    executions_run,
)
from evaluation.verification.planning import verification_plan

from .conftest import needs_bwrap
from .test_celery_workers import (
    SLOW_NO_UPPER_BOUND,
    VERDICTS,
    _assert_complete_and_unique,
    _submitted_clamp,
    _verification,
    _wait,
    _wait_state,
)
from .workers import ROOT, wait_for

WORKER_SCRIPT = ROOT / "platform" / "scripts" / "worker.sh"
SANDBOX_TASKS = ("evaluation.run_execution[", "evaluation.run_executions[")
SMALL = VerifyConfig(repeats=2, mutants=8, mutation_seed=0, probes=True, backend="bwrap")


def _embedded_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment `make run` gives its processes: nothing of ours set, so the
    embedded defaults apply (SQLite and the filesystem broker under PLATFORM_VAR_DIR)."""
    kept = {k: v for k, v in os.environ.items()
            if not k.startswith(("CELERY_", "VERIFY_", "SANDBOX_POOL", "DATABASE_", "DJANGO_"))
            and k not in {"SECRET_KEY", "REDIS_URL"}}  # fmt: skip
    return {**kept, "PLATFORM_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "config.settings", **extra}


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


# -- the settings make run runs on ------------------------------------------------------------------------


TRANSPORT_PROBE = (
    "import json, django; django.setup(); from django.conf import settings; from config.celery import app;"
    "c = app.connection_for_read(); t = c.transport;"
    "print(json.dumps({'broker': app.conf.broker_url, 'polling_interval': t.polling_interval,"
    " 'chunk': settings.VERIFICATION['CHUNK']})); c.release()"
)


def test_make_runs_broker_is_polled_every_10_ms_and_sends_executions_in_chunks(tmp_path):
    out = _python(TRANSPORT_PROBE, _embedded_env(tmp_path))
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["broker"] == "filesystem://"
    # What the worker's transport sleeps between looks (kombu's default: 1 s).
    assert probe["polling_interval"] == pytest.approx(0.01)
    assert probe["chunk"] == 16


def test_with_redis_a_message_is_one_execution_unless_told_otherwise(tmp_path):
    redis = {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/15"}
    probe = _python(TRANSPORT_PROBE.replace("c = app.connection_for_read(); t = c.transport;", "t = None;")
                    .replace(" 'polling_interval': t.polling_interval,", "").replace("; c.release()", ""),
                    _embedded_env(tmp_path, **redis))  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout.strip().splitlines()[-1])["chunk"] == 1


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"VERIFY_CHUNK": "0"}, "VERIFY_CHUNK=0 is not a chunk size"),
        ({"VERIFY_CHUNK": "-3"}, "VERIFY_CHUNK=-3 is not a chunk size"),
        ({"VERIFY_CHUNK": "many"}, "VERIFY_CHUNK='many' is not an integer"),
        ({"CELERY_FILESYSTEM_POLL_MS": "0"}, "CELERY_FILESYSTEM_POLL_MS must be at least 1"),
        ({"CELERY_FILESYSTEM_POLL_MS": "0.5"}, "CELERY_FILESYSTEM_POLL_MS='0.5' is not an integer"),
    ],
)
def test_a_bad_chunk_size_or_polling_interval_is_refused_at_start_with_its_name(tmp_path, env, message):
    out = _python("import django; django.setup()", _embedded_env(tmp_path, **env))
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and message in out.stderr, out.stderr[-2000:]


# -- cutting a verification into chunks -------------------------------------------------------------------


def test_chunks_keep_the_run_order_and_hold_at_most_their_size():
    ids = list(range(100, 137))
    chunks = execution_chunks(ids, size=16)
    assert [len(c) for c in chunks] == [16, 16, 5]
    assert [pk for chunk in chunks for pk in chunk] == ids  # references first stay first
    assert execution_chunks([], size=16) == []
    assert execution_chunks([7], size=16) == [[7]]


def test_a_long_time_limit_makes_smaller_chunks_down_to_one(settings):
    settings.VERIFICATION = {**settings.VERIFICATION, "CHUNK": 16}
    assert chunk_size_for(time_limit_s=10) == 16
    assert chunk_size_for(time_limit_s=2) == 16
    assert chunk_size_for(time_limit_s=40) == int(CHUNK_WALL_S // 40)
    assert chunk_size_for(time_limit_s=600) == 1
    assert chunk_size_for(time_limit_s=10, configured=1) == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: execution_chunks([1, 2], size=0), "at least one execution, not 0"),
        (lambda: chunk_size_for(time_limit_s=10, configured=-1), "at least one execution, not -1"),
        (lambda: chunk_size_for(time_limit_s=0), "not 0"),
        (lambda: chunk_size_for(time_limit_s=float("nan")), "not nan"),
    ],
)
def test_a_chunk_of_nothing_or_a_time_limit_of_nothing_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- chunks are idempotent (in this process, the real sandbox, the test database) ------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_chunk_delivered_again_runs_nothing_twice_and_leaves_held_runs_to_their_holder(curator):
    task = _submitted_clamp(curator, slug="chunked")
    verification, todo = verification_plan(version=task.latest_version, config=SMALL)
    first, rest = todo[:6], todo[6:]
    # Another worker holds one execution of the second chunk, with a fresh claim.
    held = rest[0]
    Execution.objects.filter(pk=held).update(status="running", started_at=timezone.now(), worker="other@host")

    ran = executions_run(execution_ids=first, worker="me@host")
    assert ran.verification_ids == [verification.pk] and not ran.held and not ran.unavailable
    assert set(Execution.objects.filter(pk__in=first).values_list("status", flat=True)) <= VERDICTS
    assert set(Execution.objects.filter(pk__in=first).values_list("attempts", flat=True)) == {1}

    again = executions_run(execution_ids=first, worker="me@host")  # the same message, delivered again
    assert not again.held and not again.unavailable
    assert set(Execution.objects.filter(pk__in=first).values_list("attempts", flat=True)) == {1}

    second = executions_run(execution_ids=rest, worker="me@host")
    assert list(second.held) == [held]
    # Its claim turns stale after the time limit plus VERIFICATION STALE_AFTER_S: look again then.
    stale_after = float(task.latest_version.time_limit_s) + 120
    assert 1 <= second.held[held] <= stale_after
    holder = Execution.objects.get(pk=held)
    assert holder.status == "running" and holder.worker == "other@host" and holder.attempts == 0
    others = Execution.objects.filter(pk__in=rest).exclude(pk=held)
    assert set(others.values_list("status", flat=True)) <= VERDICTS

    # Once the claim is stale, the chunk sent again for it runs it.
    Execution.objects.filter(pk=held).update(started_at=timezone.now() - timedelta(seconds=stale_after + 1))
    last = executions_run(execution_ids=[held], worker="me@host")
    assert not last.held
    assert Execution.objects.get(pk=held).status in VERDICTS
    verification.refresh_from_db()
    assert verification.done == verification.total == len(todo)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_chunk_the_sandbox_cannot_run_names_its_executions_for_a_retry(curator, monkeypatch):
    from evaluation.sandbox import engine

    task = _submitted_clamp(curator, slug="chunk-no-sandbox")
    _, todo = verification_plan(version=task.latest_version, config=SMALL)
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")  # every sandbox fails to start
    engine.close_pools()
    try:
        outcome = executions_run(execution_ids=todo[:3], worker="me@host")
    finally:
        monkeypatch.delenv("SANDBOX_PYTHON")
        engine.close_pools()
    assert sorted(outcome.unavailable) == sorted(todo[:3]) and not outcome.held
    assert set(Execution.objects.filter(pk__in=todo[:3]).values_list("status", flat=True)) == {"sandbox_error"}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_chunk_gives_way_to_reward_work_after_the_runs_in_hand(curator, monkeypatch):
    from evaluation.verification import execution_chunks as chunks

    monkeypatch.setenv("SANDBOX_POOL_SIZE", "2")
    monkeypatch.setattr(chunks, "_slots", None)  # the gate is sized from the setting at first use
    task = _submitted_clamp(curator, slug="gives-way")
    _, todo = verification_plan(version=task.latest_version, config=SMALL)
    asked = []

    def rewards_wait() -> bool:
        asked.append(1)
        return True

    outcome = executions_run(execution_ids=todo[:7], worker="me@host", give_way=rewards_wait)
    # Two runs start whatever waits (the chunk always makes progress); the rest wait for a later message.
    assert outcome.deferred == todo[2:7]  # in their run order, to be sent again
    statuses = dict(Execution.objects.filter(pk__in=todo[:7]).values_list("pk", "status"))
    assert {statuses[pk] for pk in todo[:2]} <= VERDICTS
    assert {statuses[pk] for pk in todo[2:7]} == {"pending"}
    assert asked  # it asked, once past the runs in hand

    calm = executions_run(execution_ids=outcome.deferred, worker="me@host", give_way=lambda: False)
    assert not calm.deferred
    assert set(Execution.objects.filter(pk__in=todo[:7]).values_list("status", flat=True)) <= VERDICTS


# -- with Redis and real workers: chunks shared and redelivered ---------------------------------------------


def _received(log: str) -> int:
    """Messages of the sandbox queue's verification tasks a worker's log says it received."""
    return sum(1 for line in log.splitlines() if line.endswith("received") and any(n in line for n in SANDBOX_TASKS))


def _sandbox_messages(workers: Any) -> int:
    return sum(_received(worker.log()) for worker in workers.workers)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_two_workers_share_a_verification_sent_in_chunks(curator, workers):
    workers.start("w1@host-a", "w2@host-b", VERIFY_CHUNK="6")
    task = _submitted_clamp(curator, slug="shared-chunks")
    verify_version.delay(task.latest_version_id)
    verification = _wait_state(workers, task.latest_version_id, VerificationState.DONE, timeout=120)

    executions = _assert_complete_and_unique(verification)
    assert all(e.attempts == 1 for e in executions)  # nothing ran twice
    assert set(Counter(e.worker for e in executions)) == {"w1@host-a", "w2@host-b"}
    assert _sandbox_messages(workers) == math.ceil(verification.total / 6)
    assert verification.verdict == "verified"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_worker_killed_mid_chunk_loses_and_duplicates_nothing(curator, workers):
    """SIGKILL worker 1 in the middle of a chunk of slow runs. Its message stays
    unacknowledged (acks_late) and comes back to worker 2 (restore sweep past a 15 s
    visibility timeout), which skips what worker 1 finished, runs what it never
    started, and looks again at what it held once those claims are stale (3 s here)."""
    w1, _w2 = workers.start(
        "w1@host-a", "w2@host-b", VERIFY_CHUNK="4", VERIFY_REPEATS="5", VERIFY_STALE_AFTER_S="3",
        CELERY_UNACKED_RESTORE_INTERVAL="1", CELERY_UNACKED_RESTORE_THROTTLE="1",
    )  # fmt: skip
    task = _submitted_clamp(curator, slug="killed-chunk", adversarial=SLOW_NO_UPPER_BOUND)
    version_pk = task.latest_version_id
    verify_version.delay(version_pk)

    def w1_mid_chunk() -> list[int]:
        verification = _verification(version_pk)
        if verification is None:
            return []
        w1_runs = verification.executions.filter(worker=w1.name)
        running = w1_runs.filter(status="running", role="adversarial")
        if not w1_runs.filter(status__in=VERDICTS).exists() or not running.exists():
            return []
        return list(running.values_list("pk", flat=True))

    _wait(workers, w1_mid_chunk, timeout=90, what="worker 1 to be in the middle of a chunk")
    w1.kill()
    verification = _verification(version_pk)
    # What it held when it died (its runs go side by side: read after the kill, not before).
    claimed = list(verification.executions.filter(worker=w1.name, status="running").values_list("pk", flat=True))
    assert claimed
    finished_by_w1 = dict(
        verification.executions.filter(worker=w1.name, status__in=VERDICTS).values_list("pk", "status")
    )

    verification = _wait_state(workers, version_pk, VerificationState.DONE, timeout=120)
    executions = _assert_complete_and_unique(verification)
    rerun = {e.pk: e for e in executions if e.attempts > 1}
    assert set(rerun) <= set(claimed), sorted(set(rerun) - set(claimed))  # only what w1 held ran twice
    assert all(e.attempts == 2 and e.worker == "w2@host-b" for e in rerun.values())
    kept = {e.pk: e.status for e in executions if e.worker == w1.name}
    assert kept == finished_by_w1  # what the dead worker finished is kept, not run again
    task.refresh_from_db()
    assert task.state in ("verified", "flagged")


# -- make run's own worker, on the filesystem broker and SQLite -----------------------------------------------


class _EmbeddedWorker:
    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(["bash", str(WORKER_SCRIPT)], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: nothing else is signalled
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def _manage(env: dict[str, str], *args: str) -> None:
    out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, f"manage.py {' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db, timeout=20) as conn:
        return conn.execute(sql).fetchall()


@needs_bwrap
def test_make_runs_worker_verifies_the_submitted_sample_tasks_a_chunk_a_message(tmp_path):
    """As `make run` does: migrate, seed_demo (its submitted tasks enqueue their
    verifications on the filesystem broker), then start platform/scripts/worker.sh.
    Every submitted task is decided, and the sandbox queue carried one message per
    chunk of executions: with one per execution (each then waited for a 1 s poll),
    this count is the number of executions."""
    var_dir = tmp_path / "var"
    env = _embedded_env(var_dir, VERIFY_REPEATS="2", VERIFY_MUTANTS="4", LOG_LEVEL="WARNING")
    _manage(env, "migrate", "--noinput")
    _manage(env, "seed_demo")
    db = var_dir / "db.sqlite3"
    submitted = [slug for (slug,) in _rows(db, "SELECT slug FROM tasks_app_task WHERE state = 'submitted'")]
    assert len(submitted) >= 5, submitted
    # Every task the demo walked through `submitted` asked for its verification then.
    asked = len(list((var_dir / "celery" / "queue").glob("*.celery.msg")))
    assert asked >= len(submitted)

    worker = _EmbeddedWorker(env, tmp_path / "worker.log")
    try:

        def decided() -> bool:
            if not worker.alive():
                raise AssertionError(f"the worker exited with {worker.process.returncode}:\n{worker.log()[-4000:]}")
            rows = _rows(db, "SELECT state FROM evaluation_verification")
            return len(rows) == asked and all(state == "done" for (state,) in rows)

        try:
            wait_for(decided, timeout=600, what="every verification the sample catalogue asked for", every=0.5)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{worker.log()[-4000:]}") from None
    finally:
        worker.stop()

    states = dict(_rows(db, "SELECT slug, state FROM tasks_app_task"))
    assert {states[slug] for slug in submitted} <= {"verified", "flagged"}, states
    statuses = Counter(status for (status,) in _rows(db, "SELECT status FROM evaluation_execution"))
    assert set(statuses) <= VERDICTS, statuses  # no sandbox_error, nothing pending or running
    executions = sum(statuses.values())
    log = worker.log()
    messages = _received(log)
    # One message per chunk of up to 16 program executions (for time limits of 10 s or less);
    # a repository task's execution (a session, up to two verdicts of 300 s) is a message alone.
    assert max(limit for (limit,) in _rows(db, "SELECT time_limit_s FROM tasks_app_taskversion")) <= 10
    by_kind = dict(_rows(db, "SELECT v.suite_kind = 'repository', count(*) FROM evaluation_execution e "
                             "JOIN evaluation_verification w ON e.verification_id = w.id "
                             "JOIN tasks_app_taskversion v ON w.version_id = v.id GROUP BY 1"))  # fmt: skip
    programs, repositories = by_kind.get(False, 0), by_kind.get(True, 0)
    assert programs + repositories == executions and repositories > 0  # the repository catalogue too
    assert messages <= math.ceil(programs / 16) + repositories + asked, (messages, programs, repositories)
    assert messages - repositories < programs / 4, (messages, programs, repositories)
    assert "concurrency: 2 (thread)" in log, log[:3000]  # one process: a warm pool shared by its task threads
    print(f"\n[make run's worker] {asked} verifications, {executions} executions, {messages} sandbox messages")


def test_make_run_starts_the_worker_this_file_checks():
    run_sh = (ROOT / "platform" / "scripts" / "run.sh").read_text()
    worker_lines = [line for line in run_sh.splitlines() if "celery" in line and not line.lstrip().startswith("#")]
    assert worker_lines == [], worker_lines  # no worker of its own beside worker.sh
    assert 'bash "$ROOT/platform/scripts/worker.sh" &' in run_sh
    assert Verification._meta.db_table == "evaluation_verification"  # the table the test above reads


def test_reward_work_waiting_is_seen_on_redis_by_priority_and_not_in_verification_messages(broker, monkeypatch):
    """With Redis, reward chunks are the sandbox queue's priority-0 messages; a chunk of
    executions asks for them, and a verification message of its own is not one."""
    from evaluation import queues
    from evaluation.tasks import run_execution

    def look() -> bool:
        monkeypatch.setattr(queues, "_urgent_seen", (-1.0, False))  # past the look's throttle
        return queues.urgent_work_waiting()

    monkeypatch.setattr(queues, "_urgent_client", None)
    assert look() is False
    run_execution.apply_async((1,), queue="sandbox")  # CELERY_TASK_DEFAULT_PRIORITY: behind rewards
    assert look() is False
    broker.send_task("trainer_bridge.run_rewards", args=([1],), queue="sandbox", priority=0)
    assert look() is True


def test_reward_work_waiting_is_seen_on_the_filesystem_broker_in_its_own_queue(tmp_path, monkeypatch):
    from config.celery import app
    from evaluation import queues
    from evaluation.tasks import run_execution

    from .workers import producer_on

    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False,
               "processed_folder": str(tmp_path), "control_folder": str(tmp_path / "control")}  # fmt: skip

    def look() -> bool:
        monkeypatch.setattr(queues, "_urgent_seen", (-1.0, False))
        return queues.urgent_work_waiting()

    with producer_on(app, "filesystem://", options):
        assert look() is False
        run_execution.apply_async((1,), queue="sandbox")
        assert look() is False
        app.send_task("trainer_bridge.run_rewards", args=([1],), queue="rewards")
        assert look() is True
        (folder / "junk.txt").write_text("not a message")
        assert look() is True
