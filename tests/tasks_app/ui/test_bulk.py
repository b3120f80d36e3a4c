from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.models import State, Task
from tasks_app.services import task_submit
from tests.factories import make_task

BULK = reverse("ui:bulk")


@pytest.fixture
def many_drafts(curator):
    """30 draft tasks tagged 'bulk' (more than one page of 25), 2 of them without a reference."""
    for i in range(28):
        make_task(owner=curator, slug=f"bulk-{i:02d}", title=f"Bulk {i}", tags=["bulk"])
    for i in range(2):
        make_task(
            owner=curator,
            slug=f"bulk-noref-{i}",
            title=f"No reference {i}",
            tags=["bulk"],
            solutions=[{"role": "adversarial", "label": "wrong", "code": "x = 1"}],
        )
    make_task(owner=curator, slug="unrelated", tags=["other"])


def test_the_list_offers_the_bulk_form_with_the_current_filters(client_for, curator, many_drafts):
    response = client_for(curator).get(reverse("ui:task-list"), {"tag": "bulk", "page": 2})
    html = response.content.decode()
    assert f'action="{BULK}"' in html
    assert 'name="filters" value="tag=bulk"' in html
    assert "all 30 matching tasks" in html


def test_the_confirmation_counts_the_whole_filtered_result_not_one_page(client_for, curator, many_drafts):
    response = client_for(curator).post(BULK, {"action": "submit", "filters": "tag=bulk&state=draft"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Submit 30 tasks</strong> matching: state=draft, tag=bulk" in html
    assert 'name="confirm" value="1"' in html
    assert Task.objects.filter(state=State.SUBMITTED).count() == 0  # nothing happens before confirming


def test_confirming_applies_to_all_and_reports_the_skipped_with_reasons(client_for, curator, many_drafts):
    data = {"action": "submit", "filters": "tag=bulk", "confirm": "1", "expected": "30"}
    response = client_for(curator).post(BULK, data, follow=True)
    assert response.redirect_chain[0] == (reverse("ui:task-list") + "?tag=bulk", 302)
    assert Task.objects.filter(tags__name="bulk", state=State.SUBMITTED).count() == 28
    assert Task.objects.get(slug="unrelated").state == State.DRAFT
    html = response.content.decode()
    assert "Submit: 28 applied, 2 skipped." in html
    assert "bulk-noref-0: A task needs a reference solution before it can be submitted." in html


def test_a_bulk_tag_touches_every_matching_task(client_for, curator, many_drafts):
    client = client_for(curator)
    confirm = client.post(BULK, {"action": "add_tag", "tag_name": "Reviewed", "filters": "tag=bulk"})
    assert "Add tag “reviewed” to 30 tasks</strong> matching: tag=bulk" in confirm.content.decode()
    data = {"action": "add_tag", "tag_name": "reviewed", "filters": "tag=bulk", "confirm": "1"}
    response = client.post(BULK, data, follow=True)
    assert Task.objects.filter(tags__name="reviewed").count() == 30
    assert "Added tag “reviewed” to 30 tasks." in response.content.decode()


def test_skipped_reasons_name_the_state_problem(client_for, curator, many_drafts):
    task_submit(actor=curator, task=Task.objects.get(slug="bulk-00"))
    data = {"action": "submit", "filters": "q=bulk-00", "confirm": "1"}
    response = client_for(curator).post(BULK, data, follow=True)
    assert "0 applied, 1 skipped" in response.content.decode()
    assert "cannot move to &#x27;submitted&#x27;" in response.content.decode()


def test_a_tag_action_without_a_valid_tag_is_a_400_next_to_the_field(client_for, curator, many_drafts):
    response = client_for(curator).post(BULK, {"action": "add_tag", "tag_name": "no spaces!", "filters": "tag=bulk"})
    assert response.status_code == 400
    assert "use lowercase letters, digits and hyphens" in response.content.decode()
    assert not Task.objects.filter(tags__name="no-spaces").exists()


def test_an_invalid_bulk_filter_is_a_400(client_for, curator, many_drafts):
    response = client_for(curator).post(BULK, {"action": "submit", "filters": "state=nope"})
    assert response.status_code == 400
    assert "Unknown state" in response.content.decode()


def test_bulk_is_post_only(client_for, curator):
    assert client_for(curator).get(BULK).status_code == 405
