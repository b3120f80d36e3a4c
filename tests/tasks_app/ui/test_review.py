from __future__ import annotations

from django.urls import reverse

from tasks_app.models import State, Task, Transition
from tests.factories import make_task
from tests.tasks_app.ui.conftest import in_review

QUEUE = reverse("ui:review-queue")


def transition_url(slug: str = "add-two") -> str:
    return reverse("ui:task-transition", args=[slug])


def test_the_review_queue_is_403_for_curators(client_for, curator):
    response = client_for(curator).get(QUEUE)
    assert response.status_code == 403
    assert "Only reviewers" in response.content.decode()


def test_the_queue_lists_flagged_tasks_first_with_inline_buttons(client_for, curator, reviewer):
    in_review(owner=curator, slug="fine", state=State.VERIFIED)
    in_review(owner=curator, slug="doubtful", state=State.FLAGGED)
    make_task(owner=curator, slug="still-draft")
    response = client_for(reviewer).get(QUEUE)
    assert response.status_code == 200
    assert [row["task"].slug for row in response.context["rows"]] == ["doubtful", "fine"]
    html = response.content.decode()
    assert "still-draft" not in html
    assert html.count('value="approved"') == 2 and html.count('value="rejected"') == 2
    assert f'hx-post="{transition_url("fine")}"' in html and 'hx-target="closest li"' in html


def test_a_reviewer_approves_with_one_post(client_for, curator, reviewer):
    task = in_review(owner=curator)
    response = client_for(reviewer).post(transition_url(), {"to_state": "approved", "return_to": "review"})
    assert response.status_code == 302 and response["Location"] == QUEUE
    task.refresh_from_db()
    assert task.state == State.APPROVED and task.approved_version_id == task.latest_version_id
    assert Transition.objects.filter(task=task, to_state=State.APPROVED, actor=reviewer).exists()


def test_an_htmx_approve_swaps_in_the_row_with_its_new_state(client_for, curator, reviewer):
    in_review(owner=curator)
    response = client_for(reviewer).post(
        transition_url(), {"to_state": "approved", "return_to": "review"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<li class="card review-item" id="review-add-two">')
    assert "Approved: add-two is now approved." in html and "badge-approved" in html
    assert 'value="approved"' not in html


def test_a_reviewer_who_authored_the_version_gets_no_buttons_and_a_forced_post_is_refused(client_for, curator_reviewer):
    in_review(owner=curator_reviewer)
    client = client_for(curator_reviewer)
    html = client.get(QUEUE).content.decode()
    assert "You authored this — another reviewer must decide." in html
    assert 'value="approved"' not in html
    response = client.post(transition_url(), {"to_state": "approved", "return_to": "review"})
    assert response.status_code == 403
    assert "Four eyes" in response.content.decode()
    assert Task.objects.get(slug="add-two").state == State.VERIFIED
    detail = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert "You authored this — another reviewer must decide." in detail and 'value="approved"' not in detail


def test_rejecting_without_a_note_shows_the_error_next_to_the_note(client_for, curator, reviewer):
    in_review(owner=curator)
    client = client_for(reviewer)
    response = client.post(transition_url(), {"to_state": "rejected", "return_to": "review", "note": "  "})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="note-add-two-errors"' in html and "A note is required to reject." in html
    assert Task.objects.get(slug="add-two").state == State.VERIFIED
    with_htmx = client.post(transition_url(), {"to_state": "rejected", "return_to": "review"}, HTTP_HX_REQUEST="true")
    assert with_htmx.status_code == 400 and "A note is required to reject." in with_htmx.content.decode()
    assert "<html" not in with_htmx.content.decode()


def test_rejecting_with_a_note_records_it(client_for, curator, reviewer):
    task = in_review(owner=curator)
    client_for(reviewer).post(transition_url(), {"to_state": "rejected", "note": "Tests accept `return 0`."})
    task.refresh_from_db()
    assert task.state == State.REJECTED
    assert task.transitions.first().note == "Tests accept `return 0`."


def test_the_detail_page_offers_the_actions_of_the_state_and_posts_them(client_for, curator):
    task = make_task(owner=curator)
    client = client_for(curator)
    html = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert 'value="submitted"' in html and 'value="retired"' in html and 'value="approved"' not in html
    response = client.post(transition_url(), {"to_state": "submitted", "note": "Ready."}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("ui:task-detail", args=["add-two"])
    task.refresh_from_db()
    assert task.state == State.SUBMITTED
    html = response.content.decode()
    assert 'value="draft"' in html and "Withdraw" in html  # the actions of the new state
    assert "Ready." in html  # the audit trail shows the note


def test_an_impossible_transition_is_a_409_on_the_detail_page(client_for, curator):
    make_task(owner=curator)
    response = client_for(curator).post(transition_url(), {"to_state": "approved"})
    assert response.status_code == 409
    assert "cannot move to &#x27;approved&#x27;" in response.content.decode()


def test_transitions_are_post_only(client_for, curator):
    make_task(owner=curator)
    assert client_for(curator).get(transition_url()).status_code == 405


def test_a_reviewer_approves_from_the_task_page_in_one_click(client_for, curator, reviewer):
    task = in_review(owner=curator)  # verified: one click (a flagged one needs a waiver note)
    client = client_for(reviewer)
    html = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert 'value="approved"' in html and 'value="rejected"' in html and 'id="review-note"' in html
    response = client.post(transition_url(), {"to_state": "approved", "return_to": "detail"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("ui:task-detail", args=["add-two"])
    assert "Approved: add-two is now approved." in response.content.decode()
    task.refresh_from_db()
    assert task.state == State.APPROVED


def test_the_queue_runs_the_same_number_of_queries_for_1_or_12_rows(client_for, curator, curator_reviewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(curator_reviewer)
    in_review(owner=curator, slug="first")
    client.get(QUEUE)
    with CaptureQueriesContext(connection) as one:
        client.get(QUEUE)
    for i in range(11):
        in_review(owner=curator_reviewer if i % 2 else curator, slug=f"more-{i}")
    with CaptureQueriesContext(connection) as twelve:
        html = client.get(QUEUE).content.decode()
    assert len(twelve) == len(one)
    # The reviewer authored five of them: four eyes hides their buttons there.
    assert html.count("another reviewer must decide") == 5


def test_the_batched_four_eyes_check_agrees_with_the_single_one(curator, curator_reviewer):
    from tasks_app.services import task_version_create
    from tasks_app.services.lifecycle import unreviewed_authors, unreviewed_authors_by_task
    from tests.factories import content_data

    a = in_review(owner=curator, slug="a")
    b = make_task(owner=curator, slug="b")
    from tasks_app.content import VersionContent

    task_version_create(actor=curator_reviewer, task=b, content=VersionContent.parse(content_data(statement="2")))
    batched = unreviewed_authors_by_task([a, b])
    assert batched == {a.pk: unreviewed_authors(a), b.pk: unreviewed_authors(b)}
    assert batched[b.pk] == {curator.pk, curator_reviewer.pk}


def test_approving_a_flagged_task_needs_a_waiver_note(client_for, curator, reviewer):
    task = in_review(owner=curator, state=State.FLAGGED)
    client = client_for(reviewer)
    refused = client.post(transition_url(), {"to_state": "approved", "return_to": "review"})
    assert refused.status_code == 400
    assert "A waiver note is required to approve a flagged task." in refused.content.decode()
    task.refresh_from_db()
    assert task.state == State.FLAGGED
    client.post(transition_url(), {"to_state": "approved", "note": "WEAK_TESTS: the survivors are equivalent."})
    task.refresh_from_db()
    assert task.state == State.APPROVED
    assert task.transitions.first().note == "WEAK_TESTS: the survivors are equivalent."


def test_a_reviewer_requests_changes_with_a_note_and_the_author_cannot(client_for, curator, reviewer, curator_reviewer):
    task = in_review(owner=curator, state=State.FLAGGED)
    client = client_for(reviewer)
    assert 'value="draft"' in client.get(QUEUE).content.decode()
    refused = client.post(transition_url(), {"to_state": "draft", "return_to": "review"})
    assert refused.status_code == 400 and "A note is required to request changes." in refused.content.decode()
    client.post(transition_url(), {"to_state": "draft", "note": "Add a test for empty input."})
    task.refresh_from_db()
    assert task.state == State.DRAFT and task.transitions.first().note == "Add a test for empty input."
    own = in_review(owner=curator_reviewer, slug="own-work", state=State.FLAGGED)
    answer = client_for(curator_reviewer).post(transition_url("own-work"), {"to_state": "draft", "note": "mine"})
    assert answer.status_code == 403
    own.refresh_from_db()
    assert own.state == State.FLAGGED
