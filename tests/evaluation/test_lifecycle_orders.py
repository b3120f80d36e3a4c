"""The review lifecycle against every order of the events that move a task with its
verification: import, verify, submit, a new version, verify again (forced).

A task verified before it was submitted used to stay `submitted` for good: submitting
planned the same verification, found it finished, and the finish returned early
("finished by another worker") without deciding. Now a submitted task whose current
configuration already has a finished verification moves at once, by that verdict.

Verifications run on the bwrap sandbox: `manage.py verify --sync` in this process
for verify and verify again, and a real Celery worker on Redis for the one that
submitting enqueues (verify_version, its executions and its finish), which the test
waits for before the next event.
"""

from __future__ import annotations

import itertools
import json
import time
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from evaluation.models import Execution, Verification, VerificationState
from evaluation.verification.config import VerifyConfig
from evaluation.verification.finishing import verification_finish
from evaluation.verification.reaper import versions_verdict_unapplied
from tasks_app.content import VersionContent
from tasks_app.importers.service import tasks_import
from tasks_app.models import State, Task, Transition
from tasks_app.services import task_submit, task_version_create
from tests.factories import content_data

from .conftest import needs_bwrap
from .samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

EVENTS = ("verify", "submit", "new version", "verify again")
# Import comes first; the other four in every order (24 sequences).
ORDERS = [("import", *order) for order in itertools.permutations(EVENTS)]
# A sound task is verified; one whose tests let a known-wrong solution pass is flagged.
FLAVOURS = {"sound": (STRONG_CLAMP_TESTS, State.VERIFIED), "weak": (["assert clamp(3, 0, 10) == 3"], State.FLAGGED)}


SMALL = {"VERIFY_REPEATS": "1", "VERIFY_MUTANTS": "0", "VERIFY_PROBES": "0", "VERIFY_ON_SUBMIT": "1"}


@pytest.fixture
def small(settings: Any, broker: Any) -> Any:
    """The current configuration, here and in any worker: two executions a verification
    (a reference run and an adversarial one); submitting enqueues (to the test's Redis)."""
    settings.VERIFICATION = {**settings.VERIFICATION, "REPEATS": 1, "MUTANTS": 0, "PROBES": False, "ON_SUBMIT": True}


@pytest.fixture
def worker(small: Any, workers: Any) -> Any:
    (started,) = workers.start("lifecycle@test", **SMALL)
    return started


def _decided(task: Task, worker: Any, timeout: float = 90.0) -> None:
    """Wait for the worker to run the verification a submission enqueued."""
    end = time.monotonic() + timeout
    while Task.objects.get(pk=task.pk).state == State.SUBMITTED:
        assert time.monotonic() < end, f"{task.slug} stayed submitted:\n{worker.log()[-3000:]}"
        time.sleep(0.1)


def _content(hidden: list[str], *, statement: str = "Clamp x into [low, high].") -> VersionContent:
    return VersionContent.parse(
        content_data(
            statement=statement,
            entry_point="clamp",
            starter_code="def clamp(x, low, high):\n    ...\n",
            visible_tests=["assert clamp(3, 0, 10) == 3"],
            hidden_tests=hidden,
            solutions=[
                {"role": "reference", "label": "ref", "code": CLAMP},
                {"role": "adversarial", "label": "no-upper-bound", "code": NO_UPPER_BOUND},
            ],
            time_limit_s=2,
        )
    )


def _import(curator: Any, slug: str, hidden: list[str]) -> Task:
    line = {"format": "taskplatform.task/v1", "slug": slug, "title": "Clamp", "tags": ["lifecycle"],
            "version": _content(hidden).canonical()}  # fmt: skip
    report = tasks_import(actor=curator, data=(json.dumps(line) + "\n").encode(), filename="lifecycle.jsonl")
    assert not report.errors, report.errors
    return Task.objects.get(slug=slug)


def _verify(slug: str, *extra: str) -> None:
    call_command("verify", "--task", slug, "--sync", "--workers", "2", *extra, stdout=StringIO(), stderr=StringIO())


def _current_done(task: Task) -> Verification | None:
    return Verification.objects.filter(
        version_id=task.latest_version_id, config_hash=VerifyConfig.from_settings().hash(), state=VerificationState.DONE
    ).first()


def _run(curator: Any, worker: Any, order: tuple[str, ...], slug: str, hidden: list[str], verdict: str) -> list[str]:
    """Apply the events in order; after each, check the task against a model of the
    lifecycle. Returns the states it went through."""
    expected, seen, versions = State.DRAFT, [], 1
    task: Task | None = None
    for event in order:
        executions_before = Execution.objects.count()
        if event == "import":
            task = _import(curator, slug, hidden)
        elif event == "verify":
            _verify(slug)
            expected = verdict if expected == State.SUBMITTED else expected
        elif event == "verify again":
            _verify(slug, "--force")
            expected = verdict if expected == State.SUBMITTED else expected
        elif event == "submit":
            verified_already = _current_done(task) is not None
            task_submit(actor=curator, task=task)
            expected = verdict  # at once, or once the verification it enqueued has run
            _decided(task, worker)
            if verified_already:  # decided by the verification it has: nothing runs again
                assert Execution.objects.count() == executions_before, f"{order}: {event} ran executions again"
        elif event == "new version":
            versions += 1
            content = _content(hidden, statement=f"Clamp x into [low, high]. (v{versions})")
            task_version_create(actor=curator, task=task, content=content, changelog="Reworded.")
            expected = State.DRAFT
        task.refresh_from_db()
        seen.append(task.state)
        assert task.state == expected, f"{order}: after {event!r} the task is {task.state!r}, not {expected!r}"
        assert versions_verdict_unapplied() == [], f"{order}: after {event!r} a submitted version has a verdict"
        if task.state in (State.VERIFIED, State.FLAGGED):
            assert _current_done(task).verdict == task.state  # by the verification of its current version
    # One decision per submission: a verdict is never applied twice.
    decisions = Transition.objects.filter(task=task, to_state__in=(State.VERIFIED, State.FLAGGED)).count()
    assert decisions == 1, f"{order}: decided {decisions} times"
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_every_order_of_import_verify_submit_new_version_and_verify_again_ends_in_the_right_state(
    curator: Any, worker: Any, flavour: str
) -> None:
    hidden, verdict = FLAVOURS[flavour]
    finals = {}
    for number, order in enumerate(ORDERS):
        states = _run(curator, worker, order, f"{flavour}-{number}", hidden, verdict)
        finals[" > ".join(order[1:])] = states[-1]
    assert len(finals) == 24
    # Submitted after the last new version: decided; a new version after the submit: back to draft.
    for order, final in finals.items():
        events = order.split(" > ")
        assert final == (verdict if events.index("submit") > events.index("new version") else State.DRAFT), order


def test_a_task_verified_then_submitted_moves_at_once_without_running_anything(curator: Any, small: Any):
    task = _import(curator, "verified-first", STRONG_CLAMP_TESTS)
    _verify(task.slug)
    executions = Execution.objects.count()
    task_submit(actor=curator, task=task)
    task.refresh_from_db()
    assert task.state == State.VERIFIED and Execution.objects.count() == executions
    last = Transition.objects.filter(task=task).order_by("-pk").first()
    assert (last.from_state, last.to_state, last.actor) == (State.SUBMITTED, State.VERIFIED, None)


def test_a_submitted_task_left_undecided_is_decided_by_the_finish_or_the_reaper(curator: Any, small: Any) -> None:
    """What if submitting did not decide (the web process died between the commit and
    its on-commit hook)? The verification's finish, asked again, decides by the verdict
    it recorded, and so does the beat's reaper."""
    from evaluation.tasks import reap_verifications

    by_finish = _import(curator, "by-finish", STRONG_CLAMP_TESTS)
    by_reaper = _import(curator, "by-reaper", ["assert clamp(3, 0, 10) == 3"])
    for task in (by_finish, by_reaper):
        _verify(task.slug)
        Task.objects.filter(pk=task.pk).update(state=State.SUBMITTED)  # submitted, its hook never ran
    assert sorted(versions_verdict_unapplied()) == sorted([by_finish.latest_version_id, by_reaper.latest_version_id])

    verification_finish(verification_id=_current_done(by_finish).pk)  # e.g. the finish of a verify_version
    by_finish.refresh_from_db()
    assert by_finish.state == State.VERIFIED
    assert versions_verdict_unapplied() == [by_reaper.latest_version_id]

    assert reap_verifications() == 1
    by_reaper.refresh_from_db()
    assert by_reaper.state == State.FLAGGED
    assert versions_verdict_unapplied() == []
    assert reap_verifications() == 0  # nothing twice


def test_a_verdict_of_another_configuration_does_not_decide_a_submitted_task(curator: Any, worker: Any):
    """Verified under a custom configuration (`verify --repeats 2`), then submitted: the
    task waits for (and here gets, in this process) the current configuration's verdict."""
    task = _import(curator, "custom-config", STRONG_CLAMP_TESTS)
    _verify(task.slug, "--repeats", "2")
    custom = Verification.objects.get(version_id=task.latest_version_id)
    assert custom.config_hash != VerifyConfig.from_settings().hash() and _current_done(task) is None
    verification_finish(verification_id=custom.pk)
    task_submit(actor=curator, task=task)  # the worker runs the current configuration's verification
    _decided(task, worker)
    task.refresh_from_db()
    assert task.state == State.VERIFIED and _current_done(task) is not None
    assert Verification.objects.filter(version_id=task.latest_version_id).count() == 2
