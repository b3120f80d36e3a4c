"""A reviewer works through the review queue: reads a flagged version's verification
report, approves it with a waiver note, rejects another; and nobody decides on a
change they authored (four eyes), whatever the page offers or is made to post."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import State, Task, Transition
from tasks_app.services import task_submit, task_transition
from tests.e2e.catalogue import weak_grade_task
from tests.e2e.conftest import JOURNEY, after_htmx_swap
from tests.factories import make_task

pytestmark = JOURNEY

# What the pipeline tests run: enough for real flags, surviving mutants and probes.
SMALL = VerifyConfig(repeats=2, mutants=8, mutation_seed=0, probes=True, backend="bwrap")
WAIVER = "Waived: the grade boundaries are covered by the course's own exam set; keep it for the warm-up pool."


def _flagged(task):
    task_submit(actor=task.owner, task=task)
    task_transition(actor=None, task=task, to_state=State.FLAGGED)
    task.refresh_from_db()
    return task


def test_a_reviewer_approves_one_flagged_version_with_a_waiver_and_rejects_another_while_authors_cannot_decide(
    signed_in, shots, page_problems, curator, reviewer, curator_reviewer
):
    started = time.monotonic()
    # Flagged by the real pipeline (in this process, on the bwrap sandbox): weak tests.
    weak = weak_grade_task(owner=curator, slug="weak-grade")
    task_submit(actor=curator, task=weak)
    verification = verification_run_inline(version=weak.latest_version, config=SMALL)
    assert verification.verdict == "flagged" and verification.flags.filter(code="WEAK_TESTS").exists()
    surviving = len(verification.summary["surviving_mutants"])
    assert surviving > 0
    # Two more flagged versions, set straight through the lifecycle service.
    noisy = _flagged(make_task(owner=curator, slug="noisy-sum", title="Noisy sum"))
    own = _flagged(make_task(owner=curator_reviewer, slug="cris-own", title="Cris's own task"))
    print(f"\n[review] set up in {time.monotonic() - started:.1f} s")

    # -- the reviewer reads the queue and the weak version's report
    page = signed_in(reviewer)
    page.goto("/review/")
    for slug in ("weak-grade", "noisy-sum", "cris-own"):
        expect(page.locator(f"#review-{slug} .badge")).to_have_text("Flagged")
    expect(page.locator("#review-weak-grade").get_by_role("button", name="Approve")).to_be_visible()
    shots(page, "queue")

    page.locator("#review-weak-grade").get_by_role("link", name="Verification report").click()
    expect(page.locator("h1")).to_contain_text("Verification of Letter grade, v1")
    expect(page.locator("h1 .badge")).to_have_text("flagged")
    # The reviewer's navigation is whole here too (the report used to shadow the user's roles).
    expect(page.locator("nav.nav").get_by_role("link", name="Review queue")).to_be_visible()
    expect(page.locator("ul.flags")).to_contain_text("WEAK_TESTS")
    expect(page.locator("#mutants")).to_have_text(f"Surviving mutants ({surviving})")
    first_mutant = page.locator("section[aria-labelledby=mutants] details").first
    first_mutant.locator("summary").click()
    expect(first_mutant.locator("pre.diff")).to_contain_text("+++ mutant.py")
    shots(page, "report")

    # -- approve the weak version: refused without a waiver, accepted with one
    page.goto("/review/")
    row = page.locator("#review-weak-grade")
    after_htmx_swap(page, lambda: row.get_by_role("button", name="Approve").click())
    expect(row.locator(".errorlist")).to_have_text("A waiver note is required to approve a flagged task.")
    assert Task.objects.get(slug="weak-grade").state == State.FLAGGED
    row.locator("textarea[name=note]").fill(WAIVER)
    after_htmx_swap(page, lambda: row.get_by_role("button", name="Approve").click())
    expect(row.locator(".banner-success")).to_have_text("Approved: weak-grade is now approved.")

    # -- reject the other: a note is required there too
    row = page.locator("#review-noisy-sum")
    after_htmx_swap(page, lambda: row.get_by_role("button", name="Reject").click())
    expect(row.locator(".errorlist")).to_have_text("A note is required to reject.")
    row.locator("textarea[name=note]").fill("The sum is not what the statement asks for.")
    after_htmx_swap(page, lambda: row.get_by_role("button", name="Reject").click())
    expect(row.locator(".banner-success")).to_have_text("Rejected: noisy-sum is now rejected.")
    expect(page.locator("#review-cris-own").get_by_role("button", name="Approve")).to_be_visible()
    shots(page, "decided")

    weak.refresh_from_db()
    noisy.refresh_from_db()
    assert weak.state == State.APPROVED and weak.approved_version_id == weak.latest_version_id
    assert Transition.objects.get(task=weak, to_state=State.APPROVED).note == WAIVER
    assert Transition.objects.get(task=weak, to_state=State.APPROVED).actor == reviewer
    assert noisy.state == State.REJECTED and noisy.approved_version_id is None
    assert Transition.objects.get(task=noisy, to_state=State.REJECTED).note.startswith("The sum is not")

    # -- the curator-reviewer who wrote cris-own sees no buttons for it, in the queue or on its page
    author = signed_in(curator_reviewer)
    author.goto("/review/")
    own_row = author.locator("#review-cris-own")
    expect(own_row.locator(".four-eyes")).to_have_text("You authored this — another reviewer must decide.")
    expect(own_row.get_by_role("button")).to_have_count(0)
    expect(author.locator("#review-weak-grade")).to_have_count(0)  # decided: out of the queue
    shots(author, "author-queue")
    author.goto("/t/cris-own/")
    expect(author.locator(".actions .banner-info")).to_have_text("You authored this — another reviewer must decide.")
    expect(author.get_by_role("button", name="Approve")).to_have_count(0)

    # A form made by hand (a stale page, a crafted post) is refused by the server, visibly.
    author.goto("/review/")
    author.evaluate(
        """() => {
            const form = document.createElement('form');
            form.method = 'post';
            form.action = '/t/cris-own/transition/';
            const token = document.querySelector('[name=csrfmiddlewaretoken]').value;
            const fields = {csrfmiddlewaretoken: token, to_state: 'approved', note: 'Looks fine to me.',
                            return_to: 'review'};
            for (const [name, value] of Object.entries(fields)) {
                const input = document.createElement('input');
                input.type = 'hidden'; input.name = name; input.value = value;
                form.append(input);
            }
            document.body.append(form);
            form.submit();
        }"""
    )
    expect(author.locator("main .banner-error").first).to_contain_text(
        re.compile(r"cris-own: Four eyes: you authored a version under review")
    )
    shots(author, "author-refused")
    own.refresh_from_db()
    assert own.state == State.FLAGGED
    assert not Transition.objects.filter(task=own, to_state=State.APPROVED).exists()

    # -- a curator who is not a reviewer cannot open the queue at all
    writer = signed_in(curator)
    response = writer.goto("/review/")
    assert response.status == 403
    expect(writer.locator("main")).to_contain_text("Only reviewers can open the review queue.")
    expect(writer.get_by_role("link", name="Review queue")).to_have_count(0)

    assert page_problems == []  # the refusals answered 400 and 403, never 500
