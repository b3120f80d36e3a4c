"""A curator filters the task list down to 200 tasks and submits them all in one bulk
action: the confirmation names the exact count, the list reports what was applied,
and the database shows exactly those 200 moved and nothing else."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from tasks_app.models import State, Task, Transition
from tests.e2e.conftest import JOURNEY
from tests.factories import make_task

pytestmark = JOURNEY

BATCH_TAG = "spring-batch"


def test_a_bulk_submit_on_a_filter_of_200_tasks_moves_exactly_those_200_and_no_other(
    signed_in, shots, page_problems, curator, other_curator
):
    started = time.monotonic()
    # The filter is two conditions, the batch tag and the owner; the 30 tasks that meet
    # only one of them must be left alone.
    for i in range(200):
        make_task(owner=curator, slug=f"batch-{i:03d}", title=f"Batch task {i}", tags=(BATCH_TAG, "arithmetic"))
    for i in range(15):
        make_task(owner=other_curator, slug=f"colins-batch-{i:02d}", title=f"Colin's {i}", tags=(BATCH_TAG,))
    for i in range(15):
        make_task(owner=curator, slug=f"untagged-{i:02d}", title=f"Untagged {i}", tags=("arithmetic",))
    chosen = set(Task.objects.filter(owner=curator, tags__name=BATCH_TAG).values_list("slug", flat=True))
    assert len(chosen) == 200
    print(f"\n[bulk] 230 tasks made in {time.monotonic() - started:.1f} s")

    page = signed_in(curator)
    page.goto("/")
    expect(page.locator("#result-count")).to_contain_text("230 tasks match")

    # Filtering swaps the results in place (htmx) and keeps the filter in the URL.
    page.select_option("#f-tag", BATCH_TAG)
    expect(page.locator("#result-count")).to_contain_text("215 tasks match")
    page.select_option("#f-author", curator.username)
    expect(page.locator("#result-count")).to_contain_text("200 tasks match")
    assert f"tag={BATCH_TAG}" in page.url and f"author={curator.username}" in page.url
    bulk = page.locator("form.bulk").first
    expect(bulk.locator("legend")).to_contain_text("Bulk action on all 200 matching tasks, not only this page")
    expect(page.locator("#results tbody tr")).to_have_count(25)  # one page shows, the action covers all
    shots(page, "filtered-list")

    bulk.locator("select[name=action]").select_option("submit")
    bulk.get_by_role("button", name="Review and confirm…").click()
    expect(page.locator(".confirm-text")).to_contain_text("Submit 200 tasks")
    expect(page.locator(".confirm-text")).to_contain_text(f"tag={BATCH_TAG}")
    expect(page.locator(".confirm-text")).to_contain_text(f"author={curator.username}")
    assert Task.objects.filter(state=State.SUBMITTED).count() == 0  # nothing happens before the confirmation
    shots(page, "confirmation")

    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".messages")).to_contain_text("Submit: 200 applied, 0 skipped.", timeout=120_000)
    expect(page.locator("#result-count")).to_contain_text("200 tasks match")
    expect(page.locator("#results tbody tr .badge").first).to_have_text("Submitted")
    expect(page.locator(".state-counts a[href='/?state=submitted'] .count")).to_have_text("200")
    expect(page.locator(".state-counts a[href='/?state=draft'] .count")).to_have_text("30")
    shots(page, "applied")

    submitted = set(Task.objects.filter(state=State.SUBMITTED).values_list("slug", flat=True))
    assert submitted == chosen
    assert Task.objects.exclude(slug__in=chosen).exclude(state=State.DRAFT).count() == 0
    moves = Transition.objects.filter(to_state=State.SUBMITTED, actor=curator, note="Bulk action.")
    assert set(moves.values_list("task__slug", flat=True)) == chosen and moves.count() == 200
    assert page_problems == []
