"""GET .../snapshots/{hash}/solutions: each member's known solutions and mutants with
the outcomes of its latest verification (run for real, in bwrap), for replay
policies; only for tokens that may read hidden tests, and only on readable
snapshots."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import Execution, MutantEquivalence
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.services import task_approve
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.samples import CLAMP, NO_UPPER_BOUND, STRONG_CLAMP_TESTS
from tests.evaluation.test_verification_pipeline import _clamp_task
from trainer_bridge.services.jobs import job_register
from trainer_bridge.services.pools import pool_create, snapshot_create

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]


@pytest.fixture
def snapshot(curator, reviewer):
    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS)
    verification = verification_run_inline(
        version=task.latest_version, config=VerifyConfig(repeats=1, mutants=6, mutation_seed=0, backend="bwrap")
    )
    assert verification.verdict == "verified", verification.summary
    task.refresh_from_db()
    task_approve(actor=reviewer, task=task)
    frozen, _ = snapshot_create(pool=pool_create(slug="clamps", title="Clamps", criteria={}))
    return frozen


def _url(snapshot) -> str:
    return reverse("api-snapshot-solutions", args=["clamps", snapshot.hash])


def test_each_member_carries_its_solutions_and_mutants_with_their_outcomes(snapshot, curator, api_as):
    answer = api_as(curator, ["read", "export:tests"]).get(_url(snapshot))
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["count"] == 1
    (member,) = body["results"]
    assert member["task_id"] == "clamp" and member["version_hash"] == snapshot.members.get().content_hash
    assert member["verification"]["verdict"] == "verified"
    by_kind = {s["kind"]: s for s in member["solutions"]}
    assert by_kind["reference"] == {"kind": "reference", "label": "ref", "code": CLAMP, "expected": "pass",
                                    "outcome": "passed"}  # fmt: skip
    assert by_kind["adversarial"]["code"] == NO_UPPER_BOUND and by_kind["adversarial"]["expected"] == "fail"
    assert by_kind["adversarial"]["outcome"] not in (None, "passed")
    mutants = {m["id"]: m for m in member["mutants"]}
    runs = Execution.objects.filter(role="mutant", verification__version=snapshot.members.get().version)
    assert set(mutants) == set(runs.values_list("subject", flat=True)) and mutants
    for run in runs:
        assert mutants[run.subject]["code"] == run.code
        assert mutants[run.subject]["verdict"] == ("survived" if run.status == "passed" else "killed")
    assert any(m["verdict"] == "killed" for m in mutants.values())


def test_a_mutant_marked_equivalent_says_so(snapshot, curator, api_as):
    member = snapshot.members.get()
    digest = Execution.objects.filter(role="mutant", verification__version=member.version).first().subject
    MutantEquivalence.objects.create(task=member.task, mutant_digest=digest, marked_by=curator)
    body = api_as(curator, ["export:tests"]).get(_url(snapshot)).json()
    assert {m["id"]: m["verdict"] for m in body["results"][0]["mutants"]}[digest] == "equivalent"


def test_only_tokens_that_may_read_hidden_tests_get_them(snapshot, curator, trainer, api_as):
    assert api_as(curator, ["read", "export"]).get(_url(snapshot)).status_code == 403
    # A trainer reads a snapshot only through a job of theirs; a job's token needs hidden tests.
    assert api_as(trainer, ["export:tests"]).get(_url(snapshot)).status_code == 404
    plain = job_register(user=trainer, name="plain", snapshot_hash=snapshot.hash)
    assert _as_job(plain).get(_url(snapshot)).status_code == 403
    hidden = job_register(user=trainer, name="replay", snapshot_hash=snapshot.hash, with_hidden_tests=True,
                          may_read_hidden=True)  # fmt: skip
    answer = _as_job(hidden).get(_url(snapshot))
    assert answer.status_code == 200 and answer.json()["results"][0]["solutions"]


def test_bad_pages_are_refused_in_the_error_shape(snapshot, curator, api_as):
    client = api_as(curator, ["export:tests"])
    answer = client.get(_url(snapshot), {"page_size": "0"})
    assert answer.status_code == 400 and "page_size" in answer.json()["error"]["details"]
    assert client.get(_url(snapshot), {"page": "9"}).status_code == 404
    assert client.get(reverse("api-snapshot-solutions", args=["clamps", "f" * 64])).status_code == 404


def _as_job(registered):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {registered.secret}")
    return client
