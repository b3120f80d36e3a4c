"""A curator builds a pool on the Pools page, previews what it selects by band and
tag, freezes a snapshot and downloads its export; a training job's token then
fetches the same snapshot over the API and gets the same records."""

from __future__ import annotations

import json

import requests
from playwright.sync_api import expect

from evaluation.models import Flag, Verification
from tasks_app.models import State
from tasks_app.services import task_approve, task_submit, task_transition
from tests.e2e.conftest import JOURNEY
from tests.factories import make_task
from trainer_bridge.models import Pool, Snapshot
from trainer_bridge.services.jobs import job_register

pytestmark = JOURNEY


def _approved(curator, reviewer, slug, *, tags, flags=()):
    """An approved task whose approved version the pipeline verified (its figures as
    the pool reads them), with these flags on that verification."""
    task = make_task(owner=curator, slug=slug, title=slug.replace("-", " ").capitalize(), tags=tags)
    task_submit(actor=curator, task=task)
    task_transition(actor=None, task=task, to_state=State.VERIFIED)
    task.refresh_from_db()
    task_approve(actor=reviewer, task=task)
    task.refresh_from_db()
    verification = Verification.objects.create(
        version=task.approved_version, config_hash=slug.ljust(64, "0")[:64], config={}, state="done",
        verdict="verified", summary={"reward_noise": {"value": 0.02}},
    )  # fmt: skip
    for code in flags:
        Flag.objects.create(verification=verification, code=code, severity="error", message=code)
    return task


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line]


def test_a_curator_builds_previews_and_freezes_a_pool_and_a_training_job_token_exports_the_same_records(
    signed_in, shots, output_dir, live_server, page_problems, curator, reviewer, trainer
):
    for i in range(3):
        _approved(curator, reviewer, f"sum-{i}", tags=("arithmetic",))
    for i in range(3):
        _approved(curator, reviewer, f"words-{i}", tags=("strings",))
    _approved(curator, reviewer, "hackable-words", tags=("strings",), flags=("HACKABLE",))  # left out by default
    _approved(curator, reviewer, "graph-walk", tags=("graphs",))  # another tag: not selected
    make_task(owner=curator, slug="draft-sum", tags=("arithmetic",))  # never approved: never in a pool

    # -- build the pool and preview it, first whole, then sampled
    page = signed_in(curator)
    page.goto("/pools/")
    page.get_by_role("link", name="New pool").click()
    page.get_by_label("Slug").fill("warm-up")
    page.get_by_label("Title").fill("Warm-up set")
    page.get_by_label("Tags, any of").fill("arithmetic, strings")
    page.get_by_role("button", name="Preview").click()
    counts = page.locator(".preview-counts")
    expect(counts).to_have_text("6 of 8 approved tasks match; a snapshot now would freeze 6.")
    by_band = page.locator("table", has=page.locator("caption", has_text="By band"))
    by_tag = page.locator("table", has=page.locator("caption", has_text="By tag"))
    # Cells row by row: name, how many match, how many a snapshot would freeze.
    expect(by_band.locator("tbody :is(th, td)")).to_have_text(["unknown", "6", "6"])
    expect(by_tag.locator("tbody :is(th, td)")).to_have_text(["arithmetic", "3", "3", "strings", "3", "3"])
    assert Pool.objects.count() == 0  # a preview makes nothing

    page.get_by_label("At most").fill("4")
    page.get_by_label("Seed").fill("7")
    page.get_by_role("button", name="Preview").click()
    expect(counts).to_have_text("6 of 8 approved tasks match; a snapshot now would freeze 4.")
    # Sampled in proportion to each tag (stratified), with the seed.
    expect(by_tag.locator("tbody :is(th, td)")).to_have_text(["arithmetic", "3", "2", "strings", "3", "2"])
    expect(page.get_by_label("Slug")).to_have_value("warm-up")  # the form came back with what was typed
    shots(page, "preview")

    # -- make it, freeze a snapshot
    page.get_by_role("button", name="Create pool").click()
    expect(page.locator(".messages")).to_contain_text("Pool warm-up made")
    expect(page.locator("h1")).to_have_text("Warm-up set")
    page.get_by_role("button", name="Freeze snapshot").click()
    expect(page.locator(".messages")).to_contain_text("Froze snapshot")
    snapshot = Snapshot.objects.get(pool__slug="warm-up")
    assert snapshot.size == 4
    expect(page.locator(".messages")).to_have_text(f"Froze snapshot {snapshot.hash[:12]} of 4 task(s).")
    row = page.locator(f"#snapshot-{snapshot.hash[:12]}")
    expect(row.locator("td").nth(1)).to_have_text("4")
    shots(page, "frozen")

    # -- download the JSONL export from the page
    with page.expect_download() as download_info:
        row.get_by_role("link", name="Download jsonl").click()
    download = download_info.value
    assert download.suggested_filename == f"warm-up-{snapshot.hash[:12]}.jsonl"
    saved = output_dir / download.suggested_filename
    download.save_as(saved)
    downloaded = _lines(saved.read_text(encoding="utf-8"))
    records = [json.loads(line) for line in downloaded]
    members = list(snapshot.members.order_by("position").values_list("task__slug", flat=True))
    assert [r["task_id"] for r in records] == members and len(members) == 4
    assert {r["snapshot"] for r in records} == {snapshot.hash}
    assert all(r["tests"]["hidden"] and r["tests"]["visible"] for r in records)  # signed in: every scope
    assert {t for r in records for t in r["tags"]} <= {"arithmetic", "strings"}
    assert "hackable-words" not in members and "graph-walk" not in members

    # -- a training job's token (its scope: this snapshot) fetches the same export over the API
    url = f"{live_server.url}/api/v1/pools/warm-up/snapshots/{snapshot.hash}/export?format=jsonl"
    job = job_register(user=trainer, name="warm-up-run", snapshot_hash=snapshot.hash, with_hidden_tests=True,
                       may_read_hidden=True)  # fmt: skip
    answer = requests.get(url, headers={"Authorization": f"Bearer {job.secret}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.headers["ETag"] == f'"{snapshot.hash}"'
    assert _lines(answer.text) == downloaded  # the same records, byte for byte

    # A job token without the hidden tests gets the same records, less those.
    plain = job_register(user=trainer, name="warm-up-plain", snapshot_hash=snapshot.hash)
    answer = requests.get(url, headers={"Authorization": f"Bearer {plain.secret}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    without_hidden = [json.loads(line) for line in _lines(answer.text)]
    for record in records:
        del record["tests"]["hidden"]
    assert without_hidden == records

    # And nobody without a token gets it.
    assert requests.get(url, timeout=60).status_code in (401, 403)
    assert page_problems == []
