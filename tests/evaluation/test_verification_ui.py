"""The verification report a curator reads, its live progress, re-verify and
marking a surviving mutant equivalent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import MutantEquivalence, Verification
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap

# Committed for real (the pipeline runs executions on other threads); serialized rollback
# puts the seeded rows (roles, content types) back for the tests after.
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

WEAK = VerifyConfig(repeats=2, mutants=6, probes=True, backend="bwrap")


@pytest.fixture
def verified(curator):
    weak = ["assert add(0, 0) == 0"]  # lets mutants such as `a - b` survive
    task = make_task(owner=curator, slug="report-me", time_limit_s=2, visible_tests=weak, hidden_tests=weak)
    task_submit(actor=curator, task=task)
    task.refresh_from_db()
    return task, verification_run_inline(version=task.latest_version, config=WEAK)


def test_the_report_shows_flags_figures_mutants_probes_and_runs(client, curator, verified):
    task, _ = verified
    client.force_login(curator)
    page = client.get(reverse("verification:report", args=[task.slug, 1]))
    assert page.status_code == 200
    html = page.content.decode()
    for expected in ("Flags", "Mutation score", "Reward noise", "Surviving mutants", "Reward-hacking probes", "Runs"):
        assert expected in html
    assert "@@" in html  # a surviving mutant's diff against the reference
    only_probes = client.get(reverse("verification:report", args=[task.slug, 1]), {"role": "probe"})
    rows = only_probes.context["runs"]
    assert rows and {r.role for r in rows} == {"probe"}
    version_page = client.get(reverse("ui:version-detail", args=[task.slug, 1]))
    assert reverse("verification:report", args=[task.slug, 1]) in version_page.content.decode()


def test_progress_polls_while_running_and_reloads_when_done(client, curator, verified):
    task, verification = verified
    client.force_login(curator)
    url = reverse("verification:progress", args=[task.slug, 1])
    Verification.objects.filter(pk=verification.pk).update(state="running", done=3)
    running = client.get(url)
    assert 'hx-trigger="every 2s"' in running.content.decode() and "3 of" in running.content.decode()
    Verification.objects.filter(pk=verification.pk).update(state="done")
    assert client.get(url)["HX-Refresh"] == "true"


def test_marking_a_survivor_equivalent_is_recorded_and_bad_input_is_refused(client, curator, verified):
    task, verification = verified
    survivor = verification.summary["surviving_mutants"][0]
    client.force_login(curator)
    url = reverse("verification:mark-equivalent", args=[task.slug, survivor])
    answer = client.post(url, {"note": "same output for every input", "version": "1"})
    assert answer.status_code == 302
    mark = MutantEquivalence.objects.get(task=task, mutant_digest=survivor)
    assert mark.marked_by == curator and mark.note == "same output for every input"
    bad = client.post(reverse("verification:mark-equivalent", args=[task.slug, "f" * 64]), {"note": "x"})
    assert bad.status_code == 404
    not_hex = client.post(reverse("verification:mark-equivalent", args=[task.slug, "zz"]), {"note": "x"})
    assert not_hex.status_code == 400


@pytest.mark.django_db  # not transactional: the commit never comes, so the callback is only captured
def test_verify_again_queues_after_commit(client, curator, django_capture_on_commit_callbacks):
    task = make_task(owner=curator, slug="again")
    client.force_login(curator)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        answer = client.post(reverse("verification:rerun", args=[task.slug, 1]), {"force": "1"})
    assert answer.status_code == 302 and len(callbacks) == 1


@pytest.mark.django_db
def test_only_curators_and_reviewers_start_verifications(client, django_capture_on_commit_callbacks):
    from tests.factories import UserFactory

    owner = UserFactory(username="owner", roles=["curator"])
    task = make_task(owner=owner, slug="not-yours")
    client.force_login(UserFactory(username="nobody", roles=[]))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        answer = client.post(reverse("verification:rerun", args=[task.slug, 1]))
    assert answer.status_code == 403 and callbacks == []


@pytest.mark.django_db
def test_verify_all_matching_a_filter_confirms_the_count_then_queues_each(
    client, curator, django_capture_on_commit_callbacks
):
    for slug, tags in (("one", ["arithmetic"]), ("two", ["arithmetic"]), ("other", ["strings"])):
        make_task(owner=curator, slug=slug, tags=tags)
    client.force_login(curator)
    listing = client.get(reverse("ui:task-list"), {"tag": "arithmetic"}).content.decode()
    assert reverse("verification:bulk") in listing and "Verify all 2 matching" in listing
    confirm = client.post(reverse("verification:bulk"), {"filters": "tag=arithmetic"})
    assert "Verify 2 tasks" in confirm.content.decode()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        done = client.post(reverse("verification:bulk"), {"filters": "tag=arithmetic", "confirm": "1"})
    assert done.status_code == 302 and len(callbacks) == 1
