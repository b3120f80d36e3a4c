"""The report's "Generated inputs" section, accepting and dismissing the tests it
proposes (one click, all, and from the review queue), and the version page's marks
on generated hidden tests. Verifications are rows (tests/evaluation/generated_world.py):
what these pages read, without a sandbox."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.models import ProposedTest
from tasks_app.content import VersionContent
from tasks_app.models import State, TaskVersion
from tasks_app.services import task_version_create
from tests.evaluation.generated_world import SAME_ID, WRONG_ID, proposals_of, weak_verification
from tests.factories import content_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for():
    def build(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return build


def _report(slug: str = "add-two", number: int = 1) -> str:
    return reverse("verification:report", args=[slug, number])


def _extra_proposal(verification, *, test: str = "assert add(200, 2) == 202", digest: str = "e" * 64) -> ProposedTest:
    """Another counterexample for the same survivor (another input the run found)."""
    first = proposals_of(verification)[0]
    return ProposedTest.objects.create(
        verification=verification, version=verification.version, reason=first.reason, mutant_digest=WRONG_ID,
        args="(200, 2)", expected="202", got="198", test=test, digest=digest, generator=first.generator, seed=7,
    )  # fmt: skip


def test_the_report_shows_the_generated_figures_the_proven_survivor_and_the_proposal(client_for, curator):
    verification = weak_verification(curator)
    proposal = proposals_of(verification)[0]
    page = client_for(curator).get(_report())
    assert page.status_code == 200
    html = page.content.decode()
    section = html.split('id="generated"', 1)[1].split('aria-labelledby="probes"', 1)[0]
    for expected in ("Inputs generated</th><td>200", "Valid</th><td>150", "Invalid</th><td>50 (25%)",
                     "precondition: 30; reference_raised: 20", "Proven non-equivalent</th><td><strong>1",
                     "Probably equivalent</th><td>1", f"<code>{SAME_ID[:12]}</code> after 150 inputs",
                     "Unjudged</th><td>0", "Mutation score, all mutants</th><td>50%",
                     "Mutation score, not probably equivalent</th><td>67%", "2 / 3 killed",
                     "Equivalence share</th><td>50%", "typed-mutation</code>, seed 7"):  # fmt: skip
        assert expected in section, expected
    # The proven survivor: its diff against the reference, the shrunk input, both answers.
    assert f"<code>{WRONG_ID[:12]}</code> a + b -&gt; a - b past 100" in section
    assert "+    return a + b if a &lt; 100 else a - b" in section and "@@" in section
    assert "<code>(100, 1)</code>" in section and "<code>101</code>" in section
    assert "returned <code>99</code>" in section and "shrunk in 5 steps" in section
    # The proposal, with its one-click buttons.
    assert "<code>assert add(100, 1) == 101</code>" in section
    accept = reverse("verification:proposal-accept", args=["add-two", 1, proposal.pk])
    assert f'action="{accept}"' in section and "Add as hidden test" in section
    assert reverse("verification:proposal-dismiss", args=["add-two", 1, proposal.pk]) in section
    assert "Accept all proposed (1)" in section


def test_reviewers_see_the_proposals_without_the_buttons_that_edit(client_for, curator, reviewer):
    weak_verification(curator)
    html = client_for(reviewer).get(_report()).content.decode()
    assert "assert add(100, 1) == 101" in html and "Add as hidden test" not in html and "Accept all" not in html


def test_the_report_reads_the_proposals_in_one_query_however_many(client_for, curator):
    verification = weak_verification(curator)
    client = client_for(curator)
    client.get(_report())
    with CaptureQueriesContext(connection) as one:
        client.get(_report())
    for i in range(5):
        _extra_proposal(verification, test=f"assert add({300 + i}, 1) == {301 + i}", digest=f"{i}" * 64)
    with CaptureQueriesContext(connection) as six:
        html = client.get(_report()).content.decode()
    assert html.count("Add as hidden test") == 6
    assert len(six) == len(one)


def test_one_click_adds_the_test_as_a_hidden_test_of_a_new_version(client_for, curator):
    verification = weak_verification(curator, seed=11)
    proposal = proposals_of(verification)[0]
    client = client_for(curator)
    answer = client.post(reverse("verification:proposal-accept", args=["add-two", 1, proposal.pk]))
    assert answer.status_code == 302 and answer["Location"] == reverse("ui:version-detail", args=["add-two", 2])
    made = TaskVersion.objects.get(task__slug="add-two", number=2)
    assert made.hidden_tests == ["assert add(-1, 1) == 0", "assert add(10, 5) == 15", "assert add(100, 1) == 101"]
    assert made.generated_tests == [{
        "hidden_index": 2, "generator": "typed-mutation", "seed": 11, "reason": "counterexample", "mutant": WRONG_ID,
        "from_version": verification.version.content_hash,
    }]  # fmt: skip
    proposal.refresh_from_db()
    assert proposal.state == "accepted" and proposal.accepted_in == made and proposal.decided_by == curator
    made.task.refresh_from_db()
    assert made.task.state == State.SUBMITTED  # verified next, with the new test
    # The version page marks it, and the old report says where it went.
    page = client.get(answer["Location"]).content.decode()
    assert "Added 1 generated hidden test to add-two: v2" in page
    assert "2 of them generated" not in page and "1 of them generated" in page
    assert 'class="generated-test"' in page and "typed-mutation seed 11" in page
    assert f"kills mutant <code>{WRONG_ID[:12]}</code>" in page
    report = client.get(_report()).content.decode()
    assert "Accepted</span>" in report and reverse("ui:version-detail", args=["add-two", 2]) in report


def test_a_proposal_for_an_older_version_is_refused_with_the_conflict_and_nothing_is_written(client_for, curator):
    verification = weak_verification(curator)
    proposal = proposals_of(verification)[0]
    task = verification.version.task
    task_version_create(actor=curator, task=task, content=VersionContent.parse(content_data(statement="Add a and b.")))
    answer = client_for(curator).post(
        reverse("verification:proposal-accept", args=["add-two", 1, proposal.pk]), follow=True
    )
    assert answer.redirect_chain[-1][0] == _report()
    assert "proposed for v1, but the task&#x27;s newest version is v2" in answer.content.decode()
    assert TaskVersion.objects.filter(task=task).count() == 2
    proposal.refresh_from_db()
    assert proposal.state == "proposed" and proposal.accepted_in is None


def test_accept_all_takes_every_proposal_into_one_version_and_dismiss_marks_one(client_for, curator):
    verification = weak_verification(curator)
    first, second = proposals_of(verification)[0], _extra_proposal(verification)
    client = client_for(curator)
    dismissed = client.post(reverse("verification:proposal-dismiss", args=["add-two", 1, second.pk]), follow=True)
    assert "Dismissed" in dismissed.content.decode()
    second.refresh_from_db()
    assert second.state == "dismissed" and second.decided_by == curator
    third = _extra_proposal(verification, test="assert add(500, 5) == 505", digest="f" * 64)
    answer = client.post(reverse("verification:proposals-accept", args=["add-two", 1]))
    assert answer["Location"] == reverse("ui:version-detail", args=["add-two", 2])
    made = TaskVersion.objects.get(task__slug="add-two", number=2)
    assert made.hidden_tests[2:] == ["assert add(100, 1) == 101", "assert add(500, 5) == 505"]
    assert [g["hidden_index"] for g in made.generated_tests] == [2, 3]
    states = dict(ProposedTest.objects.values_list("pk", "state"))
    assert (states[first.pk], states[second.pk], states[third.pk]) == ("accepted", "dismissed", "accepted")


def test_only_curators_accept_or_dismiss_and_a_foreign_proposal_is_404(client_for, curator, reviewer):
    verification = weak_verification(curator)
    other = weak_verification(curator, slug="other-task")
    proposal = proposals_of(verification)[0]
    refused = client_for(reviewer).post(reverse("verification:proposal-accept", args=["add-two", 1, proposal.pk]))
    assert refused.status_code == 403 and "Only curators" in refused.content.decode()
    foreign = proposals_of(other)[0]
    missing = client_for(curator).post(reverse("verification:proposal-accept", args=["add-two", 1, foreign.pk]))
    assert missing.status_code == 404
    assert (
        client_for(curator).get(reverse("verification:proposal-accept", args=["add-two", 1, proposal.pk])).status_code
        == 405
    )
    assert TaskVersion.objects.filter(task__slug="add-two").count() == 1
    proposal.refresh_from_db()
    assert proposal.state == "proposed"


def test_the_review_queue_shows_the_counts_and_accepts_the_selected_tasks_proposals(client_for, curator_reviewer):
    user = curator_reviewer
    weak_verification(user, slug="first")
    second = weak_verification(user, slug="second", seed=3)
    _extra_proposal(second)
    weak_verification(user, slug="untouched")
    client = client_for(user)
    queue = client.get(reverse("ui:review-queue")).content.decode()
    row = queue.split('id="review-second"', 1)[1].split("</li>", 1)[0]
    assert "Proven weak survivors: <strong>1</strong> · proposed tests: <strong>2</strong>" in row
    assert 'form="accept-proposed" name="task" value="second"' in row
    assert 'id="accept-proposed"' in queue and reverse("verification:bulk-accept-proposed") in queue

    url = reverse("verification:bulk-accept-proposed")
    confirm = client.post(url, {"task": ["first", "second"]}).content.decode()
    assert "Accept 3 proposed tests for 2 tasks" in confirm and 'name="confirm" value="1"' in confirm
    assert TaskVersion.objects.count() == 3  # nothing yet
    done = client.post(url, {"task": ["first", "second", "untouched-typo"], "confirm": "1"}, follow=True)
    html = done.content.decode()
    assert "first: accepted 1 → v2" in html and "second: accepted 2 → v2" in html
    assert "untouched-typo: skipped, no such task" in html
    assert len(TaskVersion.objects.get(task__slug="second", number=2).hidden_tests) == 4
    assert not TaskVersion.objects.filter(task__slug="untouched", number=2).exists()
    again = client.post(url, {"task": ["first"], "confirm": "1"}, follow=True).content.decode()
    assert "first: skipped, its latest verification proposes no tests" in again


def test_the_queue_runs_the_same_number_of_queries_with_the_counts(client_for, curator_reviewer):
    client = client_for(curator_reviewer)
    weak_verification(curator_reviewer, slug="one")
    client.get(reverse("ui:review-queue"))
    with CaptureQueriesContext(connection) as one:
        client.get(reverse("ui:review-queue"))
    for i in range(4):
        weak_verification(curator_reviewer, slug=f"more-{i}")
    with CaptureQueriesContext(connection) as five:
        html = client.get(reverse("ui:review-queue")).content.decode()
    assert html.count("Proven weak survivors: <strong>1</strong>") == 5
    assert len(five) == len(one)


def test_bulk_accept_is_for_curators(client_for, reviewer, curator):
    weak_verification(curator)
    queue = client_for(reviewer).get(reverse("ui:review-queue")).content.decode()
    assert 'id="accept-proposed"' not in queue and "Proven weak survivors" in queue
    refused = client_for(reviewer).post(
        reverse("verification:bulk-accept-proposed"), {"task": "add-two", "confirm": "1"}
    )
    assert refused.status_code == 403
    assert TaskVersion.objects.count() == 1


def test_the_version_page_shows_the_precondition_and_the_waiting_proposals(client_for, curator):
    weak_verification(curator)
    task = TaskVersion.objects.get().task
    precondition = "def precondition(a, b):\n    return a >= 0\n"
    task_version_create(actor=curator, task=task,
                        content=VersionContent.parse(content_data(precondition=precondition)))  # fmt: skip
    old = client_for(curator).get(reverse("ui:version-detail", args=["add-two", 1])).content.decode()
    assert "The verification proposes 1 hidden test from generated inputs" in old
    new = client_for(curator).get(reverse("ui:version-detail", args=["add-two", 2])).content.decode()
    assert "Precondition on generated inputs" in new and "return a &gt;= 0" in new
    assert "proposes" not in new and "generated-test" not in new


def test_a_verification_that_generated_no_inputs_says_so_without_figures(client_for, curator):
    from evaluation.models import Verification
    from evaluation.verification.generated.judgement import survivors_judged
    from tests.factories import make_task

    task = make_task(owner=curator, slug="stdio-like")
    generated = survivors_judged(status="", data=None, survivors=[], mutation_score=None)
    Verification.objects.create(version=task.latest_version, config_hash="none", config={}, state="done",
                                summary={"mutation_score": None, "generated": generated})  # fmt: skip
    html = client_for(curator).get(_report("stdio-like")).content.decode()
    section = html.split('id="generated"', 1)[1].split('aria-labelledby="probes"', 1)[0]
    assert "No inputs were generated for this version" in section
    assert "Inputs generated</th>" not in section and "No tests proposed." in section
