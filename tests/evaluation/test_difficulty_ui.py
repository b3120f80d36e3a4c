"""The difficulty dashboard: a fit read as a curator reads it, uploads from the page,
and what each role may do."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from evaluation.difficulty.fits import difficulty_fit_create
from evaluation.difficulty.rollouts import outcomes_record
from evaluation.models import Attempt
from tests.factories import UserFactory, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def tasks(curator):
    return [make_task(owner=curator, slug="add-two"), make_task(owner=curator, slug="add-three", title="Again",
                                                                 tags=("strings",))]  # fmt: skip


def _fit():
    rows = [{"task_id": t, "solver": s, "sample_id": str(i), "passed": bool(ok)}
            for t, s, oks in (("add-two", "strong", [1, 1, 1, 1, 1, 0]), ("add-three", "strong", [1, 0, 0, 1, 0, 0]),
                              ("add-two", "weak", [1, 0, 1, 0, 0, 0]), ("add-three", "weak", [0, 0, 0, 0, 0, 1]))
            for i, ok in enumerate(oks)]  # fmt: skip
    outcomes_record(outcomes=rows)
    return difficulty_fit_create(bootstrap=5)


def test_the_dashboard_shows_each_task_measured_with_its_band_and_the_catalogue_by_tag(client, curator, tasks):
    client.force_login(curator)
    empty = client.get(reverse("verification:difficulty")).content.decode()
    assert "No difficulty fit yet" in empty and 'href="/difficulty/"' in empty  # the nav links here
    fit = _fit()
    page = client.get(reverse("verification:difficulty"), {"solver": "weak"}).content.decode()
    assert f"Fit {fit.pk}" in page and "Target: solver weak" in page
    assert page.index("<code>add-two</code>") < page.index("<code>add-three</code>")  # easiest first
    assert page.count(">measured</span>") == 2 and "strings" in page and "arithmetic" in page
    # strong on add-two: 5 of 6, pass@1 83% with its interval
    assert re.search(r'<td>strong</td><td>5 / 6</td>\s*<td>83% <span class="muted">\(\d+-\d+%\)', page)
    only_weak = client.get(reverse("verification:difficulty"), {"passk_solver": "weak"}).content.decode()
    assert "<td>5 / 6</td>" not in only_weak and "<td>2 / 6</td>" in only_weak
    unknown = client.get(reverse("verification:difficulty"), {"solver": "nobody"}).content.decode()
    assert "solver &#x27;nobody&#x27; is not in fit" in unknown
    from evaluation.difficulty.selectors import difficulty_table

    bands = {r["task"]: r["band"] for r in difficulty_table()["tasks"]}
    for band in ("TOO_EASY", "LEARNABLE", "TOO_HARD"):
        shown = client.get(reverse("verification:difficulty"), {"band": band}).content.decode()
        for task, its_band in bands.items():
            assert (f"<code>{task}</code></a></td>\n        <td>" in shown) == (its_band == band)


def test_a_samples_file_uploaded_from_the_page_is_queued_or_refused_with_its_line(
    client, curator, tasks, django_capture_on_commit_callbacks
):
    client.force_login(curator)
    good = io.BytesIO(b'{"task_id": "add-two", "completion": "    return a + b\\n"}\n')
    good.name = "rollouts.jsonl"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        done = client.post(reverse("verification:difficulty-upload"), {"file": good, "solver": "m"}, follow=True)
    assert "1 attempt(s) queued from rollouts.jsonl" in done.content.decode() and len(callbacks) == 1
    bad = io.BytesIO(b'{"task_id": "add-two", "completion": "x"}\nnot json\n')
    bad.name = "broken.jsonl"
    refused = client.post(reverse("verification:difficulty-upload"), {"file": bad, "solver": "m"}, follow=True)
    assert "broken.jsonl was rejected, nothing was stored: line 2: not valid JSON" in refused.content.decode()
    assert Attempt.objects.count() == 1


def test_roles_decide_who_sees_and_who_acts(client, trainer, tasks):
    client.force_login(trainer)
    assert client.get(reverse("verification:difficulty")).status_code == 200
    assert client.post(reverse("verification:difficulty-refit")).status_code == 403
    assert client.post(reverse("verification:difficulty-duplicates")).status_code == 403
    client.force_login(UserFactory(username="nobody", roles=[]))
    assert client.get(reverse("verification:difficulty")).status_code == 403


def test_a_curator_scans_for_duplicates_from_the_page(client, curator, tasks):
    client.force_login(curator)
    page = client.post(reverse("verification:difficulty-duplicates"), follow=True).content.decode()
    # make_task gives both the same statement, reference and tests: one pair, linked both ways.
    assert "1 near-duplicate pair(s) flagged" in page and "Near-duplicates (1)" in page
    assert "statement, reference code, identical tests" in page
