"""`make train-demo`'s setup: a pool of approved tasks whose verification passed, its
snapshot and a token; the same pool and snapshot when run again; verified tasks
approved when none is; a wait for the worker's verifications; a clear refusal
when nothing is verified. No worker here: verifications are rows written by hand."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import Verification
from tasks_app.errors import Conflict
from tasks_app.models import ApiToken, State, Task, Transition
from tasks_app.services import task_submit, task_transition
from tests.factories import UserFactory, make_task
from tests.trainer_bridge.test_pools import _approved
from trainer_bridge.models import Pool, Snapshot
from trainer_bridge.services.demo import TOKEN_SCOPES, train_demo_setup

pytestmark = pytest.mark.django_db


def _verified(curator, slug, *, state="done", verdict="verified"):
    """A task the pipeline moved to verified, not yet approved; its verification in `state`."""
    task = make_task(owner=curator, slug=slug, title=slug)
    task_submit(actor=curator, task=task)
    task_transition(actor=None, task=task, to_state=State.VERIFIED)
    Verification.objects.create(version=task.latest_version, config_hash=slug.ljust(64, "0")[:64], config={},
                                state=state, verdict=verdict if state == "done" else "", total=10)  # fmt: skip
    return task


def _setup(curator, reviewer, trainer, **kw):
    return train_demo_setup(curator=curator, reviewer=reviewer, trainer=trainer, timeout_s=0, **kw)


def test_a_second_run_finds_the_same_pool_and_snapshot_and_makes_a_new_token(curator, reviewer, trainer):
    for slug in ("alpha", "beta"):
        _approved(curator, reviewer, slug)
    _approved(curator, reviewer, "waived", verdict="flagged")  # approved, but its verification did not pass

    first = _setup(curator, reviewer, trainer)
    assert first.tasks == ["alpha", "beta"] and first.pool == "demo" and first.approved == []
    assert first.snapshot_created
    second = _setup(curator, reviewer, trainer)
    assert (second.snapshot, second.pool, second.tasks) == (first.snapshot, first.pool, first.tasks)
    assert not second.snapshot_created
    assert Pool.objects.count() == 1 and Snapshot.objects.count() == 1
    assert second.token != first.token
    tokens = ApiToken.objects.filter(user=trainer)
    assert tokens.count() == 2 and all(t.scopes == sorted(TOKEN_SCOPES) and t.expires_at for t in tokens)
    assert set(first.as_dict()) == {"token", "snapshot", "pool", "tasks"}


def test_with_nothing_approved_it_approves_verified_tasks_as_the_reviewer(curator, reviewer, trainer):
    for slug in ("a-passed", "b-passed", "c-passed"):
        _verified(curator, slug)
    _verified(curator, "flagged-one", verdict="flagged")
    _verified(curator, "never-run", state="running")  # verification still running: after the passed ones
    said = []

    result = _setup(curator, reviewer, trainer, approve=2, say=said.append)
    assert result.approved == ["a-passed", "b-passed"] and result.tasks == ["a-passed", "b-passed"]
    assert "approved a-passed, b-passed as rita" in said[0]
    assert set(Task.objects.filter(state=State.APPROVED).values_list("slug", flat=True)) == {"a-passed", "b-passed"}
    assert Transition.objects.filter(to_state=State.APPROVED, actor=reviewer).count() == 2

    again = _setup(curator, reviewer, trainer, approve=2)
    assert again.approved == [] and again.snapshot == result.snapshot  # approved ones exist now: none added


def test_it_waits_for_the_worker_to_finish_verifying_approved_tasks(curator, reviewer, trainer):
    _approved(curator, reviewer, "ready")
    late = _approved(curator, reviewer, "late")
    Verification.objects.filter(version=late.approved_version).update(state="running", verdict="", done=3, total=10)
    said, naps = [], []

    def sleep(seconds):  # the worker finishes while we wait
        naps.append(seconds)
        Verification.objects.filter(version=late.approved_version).update(state="done", verdict="verified", done=10)

    result = train_demo_setup(curator=curator, reviewer=reviewer, trainer=trainer, timeout_s=60, poll_s=0.5,
                              say=said.append, sleep=sleep)  # fmt: skip
    assert naps == [0.5] and result.tasks == ["late", "ready"] and result.unfinished == []
    assert said == ["waiting for the worker to verify late: 3/10 executions, 0 s"]


def test_at_the_timeout_it_freezes_what_is_verified_and_names_what_is_not(curator, reviewer, trainer):
    _approved(curator, reviewer, "ready")
    late = _approved(curator, reviewer, "late")
    Verification.objects.filter(version=late.approved_version).update(state="running", verdict="")
    said = []

    result = _setup(curator, reviewer, trainer, say=said.append)
    assert result.tasks == ["ready"] and result.unfinished == ["late"]
    assert said == ["left out, still being verified after 0 s: late"]


def test_nothing_verified_is_a_clear_error(curator, reviewer, trainer):
    running = _approved(curator, reviewer, "still-running")
    Verification.objects.filter(version=running.approved_version).update(state="running", verdict="")
    never = _approved(curator, reviewer, "never-verified")
    Verification.objects.filter(version=never.approved_version).delete()
    _verified(curator, "not-approved")  # approved tasks exist (being verified): nothing more is approved

    with pytest.raises(Conflict) as caught:
        _setup(curator, reviewer, trainer)
    message = caught.value.message
    assert "No approved task has a finished, passing verification" in message
    assert "running: still-running" in message and "never: never-verified" in message
    assert not Snapshot.objects.exists() and not ApiToken.objects.exists()
    assert Task.objects.get(slug="not-approved").state == State.VERIFIED


def test_with_nothing_approved_or_verified_it_says_so(curator, reviewer, trainer):
    make_task(owner=curator, slug="draft-only")
    with pytest.raises(Conflict, match="none approved"):
        _setup(curator, reviewer, trainer)


def test_the_command_prints_its_json_last_and_refuses_outside_an_embedded_install(settings):
    curator = UserFactory(username="curator", roles=["curator"])
    reviewer = UserFactory(username="reviewer", roles=["reviewer"])
    UserFactory(username="trainer", roles=["trainer"])
    _approved(curator, reviewer, "alpha")
    settings.EMBEDDED = True
    out = StringIO()
    call_command("train_demo_setup", "--timeout", "0", stdout=out, stderr=StringIO())
    body = json.loads(out.getvalue().strip().splitlines()[-1])
    assert body["pool"] == "demo" and body["tasks"] == ["alpha"] and body["token"].startswith("tp_")
    assert Snapshot.objects.get().hash == body["snapshot"]

    settings.EMBEDDED = False
    with pytest.raises(CommandError, match="outside an embedded install"):
        call_command("train_demo_setup", "--timeout", "0", stdout=StringIO())
    with pytest.raises(CommandError, match="No user nobody"):
        settings.EMBEDDED = True
        call_command("train_demo_setup", "--user", "nobody", stdout=StringIO())


def test_the_agentic_demo_pool_holds_the_repository_tasks_only(curator, reviewer, trainer):
    from trainer_bridge.services.demo import AGENTIC_CRITERIA, AGENTIC_POOL

    _approved(curator, reviewer, "a-program")
    _approved(curator, reviewer, "a-repository", tags=("repository", "inikit"))
    agentic = _setup(curator, reviewer, trainer, pool_slug=AGENTIC_POOL, criteria=AGENTIC_CRITERIA)
    assert agentic.pool == "demo-agentic" and agentic.tasks == ["a-repository"]
    programs = _setup(curator, reviewer, trainer)
    assert programs.pool == "demo" and programs.tasks == ["a-program", "a-repository"]  # the demo pool as before
