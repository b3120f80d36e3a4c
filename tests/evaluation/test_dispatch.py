"""Services send Celery tasks by name (evaluation/dispatch.py), never importing
evaluation.tasks: a task sent by name is the very message its task object sends, goes
to the queue its name is routed to on either broker, is found in a process that never
imported the task modules, and runs on a real worker; an unknown name is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from django.db import transaction

from evaluation import dispatch
from evaluation.models import Verification, VerificationState
from evaluation.queues import filesystem_queue_lengths, queued_messages
from evaluation.verification.curator_actions import verification_request
from tests.factories import make_task

from .conftest import needs_bwrap
from .samples import CLAMP, STRONG_CLAMP_TESTS
from .workers import REDIS_DB, ROOT, producer_on, wait_for

# Fields that differ between any two messages, however they were sent.
PER_MESSAGE = {"id", "root_id", "correlation_id", "delivery_tag", "eta"}


def _messages() -> list[tuple[str, dict[str, Any]]]:
    """(queue, message) for every message waiting in the tests' Redis database, each queue
    in the order sent (kombu's Redis transport pushes to the head of a list per priority)."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    try:
        found = []
        for key in sorted(client.scan_iter()):
            if client.type(key) != b"list":
                continue
            queue = key.decode().partition("\x06\x16")[0]
            found += [(queue, json.loads(raw)) for raw in reversed(client.lrange(key, 0, -1))]
        return found
    finally:
        client.close()


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    headers = {k: v for k, v in message["headers"].items() if k not in PER_MESSAGE}
    properties = {k: v for k, v in message["properties"].items() if k not in PER_MESSAGE}
    return {
        "headers": headers,
        "properties": properties,
        "eta set": message["headers"]["eta"] is not None,
        "body": message["body"],
    }


def test_a_task_sent_by_name_goes_to_the_queue_its_name_is_routed_to(broker):
    dispatch.delay("evaluation.run_attempt", 7)  # CELERY_TASK_ROUTES: the sandbox queue
    dispatch.delay("evaluation.finish_verification", 3)  # no route: the default queue
    dispatch.apply_async("trainer_bridge.build_export", ("b1",), queue="sandbox")  # an explicit queue wins

    sent = [(queue, m["headers"]["task"], m["headers"]["argsrepr"]) for queue, m in _messages()]
    assert sorted(sent) == [
        ("celery", "evaluation.finish_verification", "(3,)"),
        ("sandbox", "evaluation.run_attempt", "(7,)"),
        ("sandbox", "trainer_bridge.build_export", "('b1',)"),
    ]
    assert queued_messages("sandbox") == 2 and queued_messages("celery") == 1


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "options"),
    [
        ("evaluation.verify_version", (5,), {"force": True, "requested_by_id": 2}, {}),
        ("evaluation.run_execution", (9,), {}, {"queue": "sandbox", "countdown": 30}),
        ("evaluation.run_executions", ([1, 2, 3],), {}, {"queue": "sandbox"}),
        ("evaluation.fit_difficulty", (), {}, {}),
    ],
)
def test_a_task_sent_by_name_is_the_message_its_task_object_sends(broker, name, args, kwargs, options):
    task = dispatch.task_named(name)
    task.apply_async(args, kwargs, **options)
    dispatch.apply_async(name, args, kwargs, **options)
    if not options:
        task.delay(*args, **kwargs)
        dispatch.delay(name, *args, **kwargs)

    sent = _messages()
    assert len(sent) == (2 if options else 4)
    queues = {queue for queue, _ in sent}
    assert len(queues) == 1, queues
    first = _comparable(sent[0][1])
    assert all(_comparable(message) == first for _, message in sent[1:])
    assert first["headers"]["task"] == name
    assert first["eta set"] == ("countdown" in options)


def test_on_the_filesystem_broker_a_task_sent_by_name_lands_in_its_queue(tmp_path):
    """The embedded mode's broker (`make run`): routed by name the same way."""
    from config.celery import app

    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False,
               "processed_folder": str(tmp_path), "control_folder": str(tmp_path / "control")}  # fmt: skip
    with producer_on(app, "filesystem://", options):
        dispatch.delay("evaluation.run_attempt", 1)
        dispatch.delay("evaluation.verify_version", 2, requested_by_id=None)
    assert filesystem_queue_lengths(folder, ["sandbox", "celery"]) == {"sandbox": 1, "celery": 1}


@pytest.mark.django_db
def test_a_bulk_request_sends_one_message_a_version_by_name_once_committed(
    broker, curator, django_capture_on_commit_callbacks
):
    from evaluation.verification.curator_actions import verifications_request_many
    from tasks_app.models import Task

    tasks = [make_task(owner=curator, slug=slug) for slug in ("bulk-one", "bulk-two")]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        queued = verifications_request_many(actor=curator, tasks=Task.objects.filter(pk__in=[t.pk for t in tasks]))
        assert _messages() == []  # nothing before the commit
    assert queued == 2 and len(callbacks) == 1
    sent = [
        (queue, m["headers"]["task"], m["headers"]["argsrepr"], m["headers"]["kwargsrepr"]) for queue, m in _messages()
    ]
    assert sorted(sent) == sorted(
        ("celery", "evaluation.verify_version", f"({t.latest_version_id},)", f"{{'requested_by_id': {curator.pk}}}")
        for t in tasks
    )


@pytest.mark.django_db
def test_an_unknown_task_name_is_refused_clearly_and_nothing_is_sent(broker, curator):
    misspelt = "evaluation.verify_versoin"
    with pytest.raises(dispatch.UnknownTask, match=rf"no Celery task is registered as '{misspelt}'.*verify_version"):
        dispatch.delay(misspelt, 1)
    with pytest.raises(dispatch.UnknownTask, match="nothing was sent"):
        dispatch.apply_async(misspelt, (1,), queue="sandbox")
    with transaction.atomic(), pytest.raises(dispatch.UnknownTask):  # refused in the transaction, not after it
        dispatch.delay_on_commit(misspelt, 1)
    assert _messages() == []


def test_a_process_that_never_imported_the_task_modules_finds_them_by_name():
    """A web process imports no tasks module (only a worker imports them at start):
    the first name it sends discovers them, as the worker does."""
    code = (
        "import sys, django; django.setup()\n"
        "from evaluation import dispatch\n"
        "assert 'evaluation.tasks' not in sys.modules and 'trainer_bridge.tasks' not in sys.modules\n"
        "print(dispatch.task_named('evaluation.verify_version').name,"
        " dispatch.task_named('trainer_bridge.build_export').name)\n"
        "try:\n"
        "    dispatch.task_named('evaluation.no_such_task')\n"
        "except dispatch.UnknownTask as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found, refused = done.stdout.splitlines()
    assert found == "evaluation.verify_version trainer_bridge.build_export"
    assert refused.startswith("refused: no Celery task is registered as 'evaluation.no_such_task'")


@needs_bwrap
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_verification_a_curator_asks_for_is_sent_by_name_once_committed_and_run_by_a_real_worker(curator, workers):
    task = make_task(owner=curator, slug="by-name", title="Clamp", entry_point="clamp",
                     statement="Clamp x into [low, high].", starter_code="def clamp(x, low, high):\n    ...\n",
                     visible_tests=["assert clamp(3, 0, 10) == 3"], hidden_tests=STRONG_CLAMP_TESTS,
                     solutions=[{"role": "reference", "label": "ref", "code": CLAMP}], time_limit_s=2)  # fmt: skip
    with transaction.atomic():
        verification_request(actor=curator, version=task.latest_version)
        assert queued_messages("celery") == 0  # not before the request commits
    assert queued_messages("celery") == 1

    workers.start("w1@host-a", VERIFY_REPEATS="1", VERIFY_MUTANTS="0", VERIFY_PROBES="0")

    def done() -> Verification | None:
        return Verification.objects.filter(version=task.latest_version, state=VerificationState.DONE).first()

    try:
        verification = wait_for(done, timeout=120, what="the verification to be done")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{workers.logs()}") from None
    assert verification.requested_by_id == curator.pk  # the arguments travelled with the name
    assert verification.verdict in ("verified", "flagged")
    assert set(verification.executions.values_list("worker", flat=True)) == {"w1@host-a"}
