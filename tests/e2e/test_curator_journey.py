"""A curator's whole loop, in a real browser against a real Celery worker: sign in,
write a task whose tests are weak, submit it, watch the verification progress on
the report page, read the mutants that survived, add the tests that kill them, save
and submit the new version, and see it verified."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from evaluation.models import Verification
from tasks_app.models import State, Task
from tests.e2e.catalogue import (
    GRADE_REFERENCE,
    GRADE_STARTER,
    GRADE_STATEMENT,
    KILLING_TESTS,
    WEAK_HIDDEN,
    WEAK_VISIBLE,
)
from tests.e2e.conftest import JOURNEY
from tests.factories import PASSWORD

pytestmark = JOURNEY

# A verification on one worker on this machine takes seconds to a minute; wait for
# far longer before calling it stuck.
VERIFY_TIMEOUT_MS = 240_000
FINISHED = re.compile(r"^Finished: \d+ executions")


def watch_progress(page, seen: list[str] | None = None) -> list[str]:
    """Read the report's progress box each time it changes, until the verification has
    finished (the page reloads itself then); return the distinct texts seen, in order,
    after those already `seen`."""
    box = page.locator("#verification-progress")
    seen = list(seen or [])
    deadline = time.monotonic() + VERIFY_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        try:
            text = " ".join(box.inner_text(timeout=VERIFY_TIMEOUT_MS).split())
        except PlaywrightError:
            continue  # read during the reload that ends the polling: read again
        if not seen or seen[-1] != text:
            seen.append(text)
        if FINISHED.match(text):
            return seen
        try:
            page.wait_for_function(
                """previous => {
                    const box = document.getElementById('verification-progress');
                    return box !== null && box.innerText.split(/\\s+/).join(' ').trim() !== previous;
                }""",
                arg=text,
                timeout=VERIFY_TIMEOUT_MS,
            )
        except PlaywrightTimeoutError as exc:
            raise AssertionError(f"the progress stayed at {text!r}; seen so far: {seen}") from exc
        except PlaywrightError:
            pass  # the page reloaded under the wait (the end of the verification): read again
    raise AssertionError(f"the verification did not finish; progress seen: {seen}")


def submit_and_open_report(page, number: int) -> None:
    page.get_by_role("button", name="Submit for review").click()
    expect(page.locator(".messages")).to_contain_text("Submitted: letter-grade is now submitted.")
    page.get_by_role("link", name="Versions").click()
    page.get_by_role("link", name=f"v{number}", exact=True).click()
    page.get_by_role("link", name="Verification report").click()
    expect(page.locator("h1")).to_contain_text(f"Verification of Letter grade, v{number}")


def test_a_curator_signs_in_writes_weak_tests_sees_the_surviving_mutants_and_strengthens_the_task_until_verified(
    workers, settings, new_page, shots, page_problems, curator
):
    # The autouse fixture of tests/conftest.py keeps submit from enqueueing: this journey
    # is about exactly that, so the live server (this process's settings) enqueues again.
    settings.VERIFICATION = {**settings.VERIFICATION, "ON_SUBMIT": True}

    # -- sign in through the form
    page = new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.get_by_label("Username").fill(curator.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".nav-user .username")).to_have_text(curator.username)

    # -- write the task: one easy case tested, nothing at the boundaries
    page.get_by_role("link", name="New task", exact=True).first.click()
    page.get_by_label("Slug").fill("letter-grade")
    page.get_by_label("Title").fill("Letter grade")
    page.get_by_label("Tags").fill("grading, basics")
    page.get_by_label("Statement").fill(GRADE_STATEMENT)
    page.get_by_label("Entry point").fill("grade")
    page.get_by_label("Suite kind").select_option("assertions")
    page.get_by_label("Starter code").fill(GRADE_STARTER)
    page.get_by_label("Visible tests (examples)").fill(WEAK_VISIBLE)
    page.get_by_label("Hidden tests").fill(WEAK_HIDDEN)
    page.locator("#id_solutions-0-role").select_option("reference")
    page.locator("#id_solutions-0-label").fill("ref")
    page.locator("#id_solutions-0-code").fill(GRADE_REFERENCE)
    page.get_by_label("Time limit (seconds)").fill("5")
    page.get_by_label("Changelog message").fill("First draft: one example per grade is enough, surely.")
    shots(page, "new-task-form")
    page.get_by_role("button", name="Create task").click()
    expect(page.locator(".messages")).to_contain_text("Created letter-grade v1.")
    task = Task.objects.get(slug="letter-grade")
    assert task.owner == curator and task.latest_version.hidden_tests == [WEAK_HIDDEN]

    # -- submit with no worker up yet: the report waits for one, polling; then a worker
    # starts, takes the queued verification, and the page follows it to the end.
    submit_and_open_report(page, 1)
    waiting = "Submitted: waiting for a worker to start the verification."
    expect(page.locator("#verification-progress")).to_have_text(waiting)
    shots(page, "report-waiting-for-a-worker")
    workers.start("w1@e2e-host")  # the page goes on polling while the worker starts
    first_progress = watch_progress(page, seen=[waiting])
    assert FINISHED.match(first_progress[-1]) and len(first_progress) >= 2, first_progress
    expect(page.locator("h1 .badge")).to_have_text("flagged")
    expect(page.locator("ul.flags")).to_contain_text("WEAK_TESTS")
    survivors = page.locator("section[aria-labelledby=mutants] details")
    expect(page.locator("#mutants")).to_have_text(re.compile(r"Surviving mutants \([1-9]\d*\)"))
    first = Verification.objects.get(version=task.latest_version)
    assert first.verdict == "flagged" and survivors.count() == len(first.summary["surviving_mutants"])
    for i in range(survivors.count()):  # read every surviving mutant's diff
        survivors.nth(i).locator("summary").click()
        expect(survivors.nth(i).locator("pre.diff")).to_contain_text("+++ mutant.py")
    # The navigation keeps the curator's links here too (it lost them to a clash of names).
    expect(page.locator("nav.nav").get_by_role("link", name="New task")).to_be_visible()
    expect(page.locator("nav.nav").get_by_role("link", name="Review queue")).to_have_count(0)  # a curator only
    shots(page, "report-with-surviving-mutants")
    shots(page, "report-flags-and-surviving-mutants", upto=page.locator("section[aria-labelledby=mutants]"))

    # -- add the tests that kill them, save a new version
    page.locator(".breadcrumb").get_by_role("link", name="letter-grade").click()
    page.get_by_role("link", name="Edit").click()
    hidden = page.get_by_label("Hidden tests")
    expect(hidden).to_have_value(WEAK_HIDDEN)
    hidden.fill("\n".join([WEAK_HIDDEN, *KILLING_TESTS]))
    page.get_by_label("Changelog message").fill("Test both sides of every boundary: kills the surviving mutants.")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved v2.")
    task.refresh_from_db()
    assert task.latest_version.number == 2 and task.state == State.DRAFT

    # -- submit v2 (the worker is up now): verified, every mutant killed
    submit_and_open_report(page, 2)
    second_progress = watch_progress(page)
    assert FINISHED.match(second_progress[-1]), second_progress
    # Each run is 33 sandbox executions one after another, polled every 2 s: the page
    # shows at least one of them part-way (here it shows several for each run).
    assert any(text.startswith("Verifying:") for text in first_progress + second_progress)
    expect(page.locator("h1 .badge")).to_have_text("verified")
    expect(page.locator("section[aria-labelledby=flags] .banner-success")).to_contain_text("No flags")
    expect(page.locator("#mutants")).to_have_text("Surviving mutants (0)")
    expect(page.locator("section[aria-labelledby=mutants]")).to_contain_text("Every mutant was killed.")
    shots(page, "report-verified")

    task.refresh_from_db()
    assert task.state == State.VERIFIED
    second = Verification.objects.get(version=task.latest_version)
    assert second.verdict == "verified" and second.summary["surviving_mutants"] == []
    assert second.executions.filter(role="mutant").count() == first.executions.filter(role="mutant").count() > 0
    print(f"\n[curator] progress seen: v1 {first_progress}, v2 {second_progress}")
    assert page_problems == []
