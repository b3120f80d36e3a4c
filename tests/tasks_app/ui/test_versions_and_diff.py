from __future__ import annotations

import pytest
from django.urls import reverse

from tasks_app.content import VersionContent
from tasks_app.services import task_version_create
from tests.factories import content_data, make_task


@pytest.fixture
def edited(curator):
    """add-two at v2: the statement and one hidden test changed, a test added."""
    task = make_task(owner=curator)
    content = content_data(
        statement="Return the sum of `a` and `b`, two integers.",
        hidden_tests=["assert add(-1, 1) == 0", "assert add(10, 5) == 15", "assert add(0, 0) == 0"],
    )
    task_version_create(actor=curator, task=task, content=VersionContent.parse(content), changelog="Integers only.")
    return task


def diff_url(**params) -> str:
    url = reverse("ui:version-diff", args=["add-two"])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_version_history_lists_every_version_with_its_changelog(client_for, curator, edited):
    response = client_for(curator).get(reverse("ui:version-list", args=["add-two"]))
    assert response.status_code == 200
    assert [v.number for v in response.context["versions"]] == [2, 1]
    html = response.content.decode()
    assert "Integers only." in html and "First." in html
    assert 'name="left" value="1" id="left-1" checked' in html
    assert 'name="right" value="2" id="right-2" checked' in html


def test_one_version_is_shown_read_only(client_for, curator, edited):
    response = client_for(curator).get(reverse("ui:version-detail", args=["add-two", 1]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "not the newest version" in html and edited.versions.get(number=1).content_hash in html
    missing = client_for(curator).get(reverse("ui:version-detail", args=["add-two", 9]))
    assert missing.status_code == 404 and "has no version 9" in missing.content.decode()


def test_the_diff_shows_both_versions_changed_lines_side_by_side(client_for, curator, edited):
    response = client_for(curator).get(diff_url(left=1, right=2))
    assert response.status_code == 200
    html = response.content.decode()
    statement = html.split("<h2", 1)[1] if "<h2" in html else html
    # The replaced statement line: the old text on the left, the new on the right, in one row.
    assert '<tr class="diff-replace">' in statement
    row = statement.split('<tr class="diff-replace">')[1].split("</tr>")[0]
    assert "Return the sum of `a` and `b`." in row and "two integers." in row
    assert row.index("Return the sum of `a` and `b`.") < row.index("two integers.")
    # The added hidden test appears on the right only.
    inserted = html.split('<tr class="diff-insert">')[1].split("</tr>")[0]
    assert "assert add(0, 0) == 0" in inserted and '<td class="ln">3</td>' in inserted
    # Sections that did not change are collapsed to one line.
    assert "<strong>Limits</strong>: unchanged" in html
    assert "<strong>Solution ref (reference)</strong>: unchanged" in html


def test_the_diff_defaults_to_the_latest_version_against_its_parent(client_for, curator, edited):
    response = client_for(curator).get(diff_url())
    assert response.status_code == 200
    assert (response.context["left"].number, response.context["right"].number) == (1, 2)


def test_the_diff_of_a_first_version_says_there_is_nothing_to_compare(client_for, curator):
    make_task(owner=curator)
    response = client_for(curator).get(diff_url())
    assert response.status_code == 200
    assert "v1 is the first version" in response.content.decode()


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"left": "one", "right": 2}, 400, "left must be a version number"),
        ({"left": 1, "right": "-2"}, 400, "right must be a version number"),
        ({"left": 1, "right": "99999999999999999999"}, 400, "right must be a version number"),
        ({"left": 1, "right": 7}, 404, "has no version 7"),
    ],
)
def test_bad_diff_parameters_give_a_clear_4xx(client_for, curator, edited, params, status, message):
    response = client_for(curator).get(diff_url(**params))
    assert response.status_code == status
    assert message in response.content.decode()


def test_an_unknown_task_is_a_404_page(client_for, curator):
    response = client_for(curator).get(reverse("ui:task-detail", args=["nope"]))
    assert response.status_code == 404
    assert "No task with slug" in response.content.decode()
