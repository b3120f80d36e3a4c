from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tasks_app.models import State
from tasks_app.services import task_submit
from tests.factories import UserFactory, make_task

LIST = reverse("ui:task-list")


def slugs_in(response) -> list[str]:
    """Task slugs in the order the results table shows them."""
    return re.findall(r'<code class="slug">([a-z0-9-]+)</code>', response.content.decode())


@pytest.fixture
def catalogue(curator, other_curator):
    """Three tasks that differ in every filterable way."""
    make_task(owner=curator, slug="add-two", title="Add two numbers", tags=["arithmetic"])
    words = make_task(
        owner=other_curator,
        slug="count-words",
        title="Count words",
        tags=["strings"],
        statement="Count the whitespace separated tokens in a sentence.",
        entry_point=None,
        suite_kind="stdio",
        visible_tests=[],
        hidden_tests=[{"input": "a b\n", "output": "2\n"}],
        solutions=[{"role": "reference", "label": "ref", "code": "print(len(input().split()))\n"}],
    )
    task_submit(actor=other_curator, task=words)
    make_task(
        owner=curator,
        slug="reverse-list",
        title="Reverse a list",
        tags=["lists", "strings"],
        statement="Return the elements in backwards order.",
    )


def test_pages_require_login(client, catalogue):
    for url in (
        LIST,
        reverse("ui:task-detail", args=["add-two"]),
        reverse("ui:review-queue"),
        reverse("ui:task-create"),
        reverse("ui:version-diff", args=["add-two"]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_login_page_renders_with_the_base_layout(client, db):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert 'name="viewport"' in html and 'class="skip-link"' in html


def test_the_list_shows_tasks_and_counts_per_state(client_for, curator, catalogue):
    response = client_for(curator).get(LIST)
    assert response.status_code == 200
    assert sorted(slugs_in(response)) == ["add-two", "count-words", "reverse-list"]
    counts = {value: n for value, _label, n in response.context["state_counts"]}
    assert counts[State.DRAFT] == 2 and counts[State.SUBMITTED] == 1 and counts[State.APPROVED] == 0
    html = response.content.decode()
    assert "htmx-2.min.js" in html
    assert "v1 <code" in html  # latest version number with its short hash


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("reverse", ["reverse-list"]),  # a word of the title
        ("whitespace", ["count-words"]),  # a word only the statement has
        ("strings", ["count-words", "reverse-list"]),  # a tag
    ],
)
def test_search_finds_by_title_statement_and_tag(client_for, curator, catalogue, q, expected):
    response = client_for(curator).get(LIST, {"q": q})
    assert sorted(slugs_in(response)) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"state": "submitted"}, ["count-words"]),
        ({"tag": "strings"}, ["count-words", "reverse-list"]),
        ({"author": "colin"}, ["count-words"]),
        ({"suite_kind": "stdio"}, ["count-words"]),
        ({"suite_kind": "assertions", "author": "cora"}, ["add-two", "reverse-list"]),
    ],
)
def test_each_filter_narrows_the_list(client_for, curator, catalogue, params, expected):
    response = client_for(curator).get(LIST, params)
    assert response.status_code == 200
    assert sorted(slugs_in(response)) == expected


def test_sorting_orders_the_rows(client_for, curator, catalogue):
    client = client_for(curator)
    assert slugs_in(client.get(LIST, {"sort": "slug"})) == ["add-two", "count-words", "reverse-list"]
    assert slugs_in(client.get(LIST, {"sort": "-slug"})) == ["reverse-list", "count-words", "add-two"]
    assert slugs_in(client.get(LIST, {"sort": "-state"}))[0] == "count-words"  # submitted after draft, reversed
    # The column header offers the other direction of the current sort.
    assert 'href="?sort=-slug"' in client.get(LIST, {"sort": "slug"}).content.decode()


def test_pagination_keeps_the_filters(client_for, curator):
    for i in range(30):
        make_task(owner=curator, slug=f"task-{i:02d}", title=f"Task {i}", tags=["paged"])
    make_task(owner=curator, slug="other", title="Other", tags=["elsewhere"])
    client = client_for(curator)
    first = client.get(LIST, {"tag": "paged", "sort": "slug"})
    assert len(slugs_in(first)) == 25
    assert first.context["page"].paginator.count == 30
    html = first.content.decode()
    assert 'href="?tag=paged&amp;sort=slug&amp;page=2"' in html
    second = client.get(LIST, {"tag": "paged", "sort": "slug", "page": 2})
    assert slugs_in(second) == [f"task-{i:02d}" for i in range(25, 30)]


def test_an_invalid_filter_gives_400_with_the_message(client_for, curator, catalogue):
    response = client_for(curator).get(LIST, {"state": "bogus", "sort": "sideways"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Unknown state &#x27;bogus&#x27;" in html
    assert "Unknown sort &#x27;sideways&#x27;" in html


def test_an_htmx_request_returns_only_the_results_partial(client_for, curator, catalogue):
    response = client_for(curator).get(LIST, {"q": "reverse"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and '<nav class="state-counts"' not in html
    assert slugs_in(response) == ["reverse-list"]
    assert 'id="result-count"' in html and 'hx-swap-oob="true"' in html
    assert "HX-Request" in response["Vary"]


def test_an_htmx_history_restore_gets_the_full_page(client_for, curator, catalogue):
    response = client_for(curator).get(LIST, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in response.content.decode()


def test_the_search_box_updates_results_with_htmx(client_for, curator, catalogue):
    html = client_for(curator).get(LIST).content.decode()
    assert 'hx-trigger="input changed delay:300ms, search"' in html
    assert 'hx-target="#results"' in html and 'hx-push-url="true"' in html


def test_a_user_without_roles_sees_no_bulk_or_new_task_controls(client_for, catalogue):
    nobody = UserFactory(username="nora")
    html = client_for(nobody).get(LIST).content.decode()
    assert reverse("ui:bulk") not in html and reverse("ui:task-create") not in html


def test_the_list_page_runs_the_same_number_of_queries_for_3_or_25_rows(client_for, curator, catalogue):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(curator)
    client.get(LIST)  # warm the session and role caches
    with CaptureQueriesContext(connection) as few:
        client.get(LIST)
    for i in range(22):
        make_task(owner=curator, slug=f"more-{i:02d}", title=f"More {i}", tags=[f"tag-{i}"])
    with CaptureQueriesContext(connection) as many:
        assert len(slugs_in(client.get(LIST))) == 25
    assert len(many) == len(few)
