"""The curator's pool pages: the list, a new pool previewed before it is made (its
errors beside the fields), freezing, diffing, and background builds whose progress
the page polls until their download link shows; what each role may do."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.factories import UserFactory
from tests.trainer_bridge.test_pools import _approved
from trainer_bridge.models import ExportBuild, Pool, Snapshot
from trainer_bridge.services.builds import build_run
from trainer_bridge.services.pools import pool_create, snapshot_create

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _exports_in_tmp(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"


@pytest.fixture
def catalogue(curator, reviewer):
    tasks = [_approved(curator, reviewer, f"sum-{i}", tags=("arithmetic",)) for i in range(3)]
    tasks += [_approved(curator, reviewer, f"word-{i}", tags=("strings",), noise=0.3) for i in range(2)]
    return tasks


def _form(**criteria):
    data = {"slug": "", "title": "", "exclude_flags": ["HACKABLE", "DUPLICATE"], "stratify": "on", "seed": "0"}
    data.update(criteria)
    return data


def _errors_of(page: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}-errors">(.*?)</ul>', page, re.S)
    return found.group(1) if found else ""


def test_the_list_shows_each_pool_with_what_it_selects_and_its_latest_snapshot(
    client, curator, catalogue, django_assert_max_num_queries
):
    mixed = pool_create(slug="mixed", title="Mixed bag", criteria={"max_reward_noise": 0.1, "max_size": 2, "seed": 4})
    snapshot = snapshot_create(pool=mixed)[0]
    pool_create(slug="text", title="Text only", criteria={"tags_include": ["strings"]})
    client.force_login(curator)
    page = client.get(reverse("pools:list")).content.decode()
    assert "Mixed bag" in page and "Text only" in page and page.index("Mixed bag") < page.index("Text only")
    assert "noise ≤ 0.1; at most 2 (stratified, seed 4)" in page and "tags strings" in page
    assert f'<code title="{snapshot.hash}">{snapshot.hash[:12]}</code>' in page and "2 tasks" in page
    assert "none yet" in page  # "text" has no snapshot
    for i in range(6):
        snapshot_create(pool=pool_create(slug=f"more-{i}", title=f"More {i}", criteria={"tags_include": ["strings"]}))
    with django_assert_max_num_queries(6):  # session, user, roles, pools: not one more a pool
        assert client.get(reverse("pools:list")).status_code == 200


def test_a_curator_previews_a_pool_sees_a_bad_criterion_beside_its_field_then_makes_it(client, curator, catalogue):
    client.force_login(curator)
    blank = client.get(reverse("pools:create")).content.decode()
    assert 'name="max_reward_noise"' in blank and 'value="HACKABLE"' in blank and "checked" in blank
    assert 'hx-post="/pools/preview"' in blank

    preview = client.post(reverse("pools:preview"), _form(max_reward_noise="0.1"), **HTMX)
    body = preview.content.decode()
    assert preview.status_code == 200 and body.lstrip().startswith("<form")  # the form alone, to swap in
    assert "<strong>3</strong> of 5 approved tasks match" in body and "would freeze <strong>3</strong>" in body
    assert '<th scope="row">arithmetic</th><td>3</td><td>3</td>' in body and ">strings<" not in body
    sized = client.post(reverse("pools:preview"), _form(max_size="2", seed="1"), **HTMX).content.decode()
    assert "<strong>5</strong> of 5" in sized and "would freeze <strong>2</strong>" in sized

    bad = client.post(reverse("pools:preview"), _form(max_reward_noise="2", max_size="lots"), **HTMX)
    page = bad.content.decode()
    assert bad.status_code == 400 and "Expected a number from 0.0 to 1.0." in _errors_of(page, "max_reward_noise")
    assert "Expected a whole number of at least 1." in _errors_of(page, "max_size")
    assert 'value="lots"' in page and 'aria-invalid="true"' in page  # what was typed stays, marked
    assert "would freeze" not in page

    refused = client.post(reverse("pools:create"), _form(slug="Bad Slug", difficulty_min="3", difficulty_max="1"))
    page = refused.content.decode()
    assert refused.status_code == 400 and "is above difficulty_max" in _errors_of(page, "difficulty_min")
    assert not Pool.objects.exists()
    made = client.post(reverse("pools:create"), _form(slug="cheap", title="Cheap", tags_exclude="strings"))
    assert made.status_code == 302 and made["Location"] == reverse("pools:detail", args=["cheap"])
    assert Pool.objects.get(slug="cheap").criteria["tags_exclude"] == ["strings"]
    taken = client.post(reverse("pools:create"), _form(slug="cheap"))
    assert taken.status_code == 400 and "Taken." in _errors_of(taken.content.decode(), "slug")


def test_freezing_lists_the_snapshot_and_two_snapshots_diff(client, curator, reviewer, catalogue):
    pool = pool_create(slug="all", title="Everything", criteria={})
    client.force_login(curator)
    frozen = client.post(reverse("pools:freeze", args=["all"]), follow=True).content.decode()
    first = Snapshot.objects.get()
    assert f"Froze snapshot {first.hash[:12]} of 5 task(s)." in frozen and f'title="{first.hash}"' in frozen
    assert "cora" in frozen  # by
    again = client.post(reverse("pools:freeze", args=["all"]), follow=True).content.decode()
    assert f"Nothing changed since snapshot {first.hash[:12]}" in again and Snapshot.objects.count() == 1
    assert "Compare two snapshots" not in again  # one snapshot: nothing to compare

    _approved(curator, reviewer, "late-comer", tags=("strings",))
    client.post(reverse("pools:freeze", args=["all"]))
    second = pool.snapshots.exclude(pk=first.pk).get()
    page = client.get(reverse("pools:detail", args=["all"])).content.decode()
    assert "Compare two snapshots" in page and page.index(second.hash[:12]) < page.index(first.hash[:12])
    diff = client.get(reverse("pools:detail", args=["all"]), {"from": first.hash, "to": second.hash})
    shown = diff.content.decode()
    assert "1 added, 0 removed, 0 changed" in shown and "<li><code>late-comer</code></li>" in shown
    unknown = client.get(reverse("pools:detail", args=["all"]), {"from": first.hash, "to": "0" * 64})
    assert unknown.status_code == 200 and "No snapshot" in unknown.content.decode()


def test_nothing_to_freeze_is_said_not_failed(client, curator, catalogue):
    pool_create(slug="none", title="None", criteria={"tags_include": ["graphs"]})
    client.force_login(curator)
    page = client.post(reverse("pools:freeze", args=["none"]), follow=True).content.decode()
    assert "Nothing frozen: Pool &#x27;none&#x27; selects no task" in page and not Snapshot.objects.exists()


def test_a_background_build_shows_its_progress_then_its_download_link(
    client, curator, catalogue, django_capture_on_commit_callbacks
):
    snapshot = snapshot_create(pool=pool_create(slug="all", title="All", criteria={}))[0]
    client.force_login(curator)
    page = client.get(reverse("pools:detail", args=["all"])).content.decode()
    build_url = reverse("pools:build", args=["all", snapshot.hash])
    for fmt in ("jsonl", "json"):
        assert f'href="/api/v1/pools/all/snapshots/{snapshot.hash}/export?format={fmt}"' in page
        assert f'name="format" value="{fmt}" hx-post="{build_url}"' in page
        assert f'id="build-{snapshot.pk}-{fmt}"' in page

    with django_capture_on_commit_callbacks(execute=False) as queued:
        started = client.post(build_url, {"format": "jsonl"}, **HTMX)
    assert started.status_code == 202 and len(queued) == 1
    build = ExportBuild.objects.get()
    progress_url = reverse("pools:build-progress", args=["all", build.pk])
    fragment = started.content.decode()
    assert f'id="build-{snapshot.pk}-jsonl"' in fragment and f'hx-get="{progress_url}"' in fragment
    assert "queued" in fragment and 'hx-trigger="every 1s"' in fragment
    assert build.with_hidden_tests and not build.gzip  # signed in: what the page's streamed links give

    # What the slot shows while a worker is half-way through.
    ExportBuild.objects.filter(pk=build.pk).update(state="running", rows_done=2, started_at=timezone.now())
    moving = client.get(progress_url, **HTMX).content.decode()
    assert "2 of 5 rows" in moving and '<progress max="5" value="2"' in moving and "every 1s" in moving

    ExportBuild.objects.filter(pk=build.pk).update(state="queued", rows_done=0, started_at=None)
    assert build_run(build_id=build.pk).state == "done"
    done = client.get(progress_url, **HTMX).content.decode()
    download = reverse("api-export-build-download", args=[build.pk])
    assert f'href="{download}"' in done and "hx-get" not in done and "5 rows" in done
    got = client.get(download)  # the session works for the API's download
    streamed = client.get(reverse("api-snapshot-export", args=["all", snapshot.hash]))
    assert got.status_code == 200 and b"".join(got.streaming_content) == b"".join(streamed.streaming_content)

    with django_capture_on_commit_callbacks(execute=False) as again:
        reused = client.post(build_url, {"format": "jsonl"}, **HTMX)
    assert reused.status_code == 200 and again == [] and ExportBuild.objects.count() == 1
    zipped = client.post(build_url, {"format": "json", "gzip": "1"}, follow=True)
    assert zipped.status_code == 200 and ExportBuild.objects.get(format="json").gzip
    page = client.get(reverse("pools:detail", args=["all"])).content.decode()
    assert f'href="{download}"' in page and "queued" in page  # the json build waits for a worker


def test_the_pool_page_reads_a_fixed_number_of_queries(
    client, curator, reviewer, catalogue, django_assert_max_num_queries
):
    pool = pool_create(slug="all", title="All", criteria={})
    client.force_login(curator)
    for i in range(4):
        snapshot = snapshot_create(pool=pool, actor=curator)[0]
        for fmt in ("jsonl", "json"):
            client.post(reverse("pools:build", args=["all", snapshot.hash]), {"format": fmt})
        _approved(curator, reviewer, f"extra-{i}")
    diff = {"from": Snapshot.objects.last().hash, "to": Snapshot.objects.first().hash}
    with django_assert_max_num_queries(20) as captured:
        assert client.get(reverse("pools:detail", args=["all"]), diff).status_code == 200
    few = len(captured.captured_queries)
    for i in range(4):
        snapshot = snapshot_create(pool=pool, actor=curator)[0]
        client.post(reverse("pools:build", args=["all", snapshot.hash]), {"format": "jsonl"})
        _approved(curator, reviewer, f"more-{i}")
    with django_assert_max_num_queries(few):  # twice the snapshots and builds: no more queries
        assert client.get(reverse("pools:detail", args=["all"]), diff).status_code == 200


def test_trainers_look_and_export_their_jobs_snapshots_only_curators_make_and_freeze(client, trainer, catalogue):
    snapshot = snapshot_create(pool=pool_create(slug="all", title="All", criteria={}))[0]
    client.force_login(trainer)
    assert client.get(reverse("pools:list")).status_code == 200
    page = client.get(reverse("pools:detail", args=["all"])).content.decode()
    assert "Freeze snapshot" not in page and "Exported through a training job" in page and "hx-post" not in page
    assert client.get(reverse("pools:create")).status_code == 403
    assert client.post(reverse("pools:create"), _form(slug="mine")).status_code == 403
    assert client.post(reverse("pools:preview"), _form()).status_code == 403
    assert client.post(reverse("pools:freeze", args=["all"])).status_code == 403
    refused = client.post(reverse("pools:build", args=["all", snapshot.hash]), {"format": "jsonl"})
    assert refused.status_code == 404 and not ExportBuild.objects.exists()

    from trainer_bridge.models import TrainingJob

    TrainingJob.objects.create(name="run", snapshot=snapshot, solver="policy", created_by=trainer)
    page = client.get(reverse("pools:detail", args=["all"])).content.decode()
    assert "Build jsonl in background" in page
    assert client.post(reverse("pools:build", args=["all", snapshot.hash]), {"format": "jsonl"}).status_code == 302
    client.force_login(UserFactory(username="nobody", roles=[]))
    assert client.get(reverse("pools:list")).status_code == 403


def test_the_nav_links_to_pools_beside_the_other_apps_pages(client, curator):
    client.force_login(curator)
    page = client.get(reverse("pools:list")).content.decode()
    assert '<a href="/pools/" aria-current="page">Pools</a>' in page and 'href="/difficulty/"' in page
    assert 'href="/jobs/">Jobs</a>' in page


def test_the_nav_template_adds_pools_and_still_renders_the_apps_after_it(client, curator, settings):
    """trainer_bridge's tasks_app/_nav_extras.html is found first; evaluation's links
    (the template it overrides) still show after the Pools link."""
    client.force_login(curator)
    page = client.get(reverse("pools:list")).content.decode()
    nav = page[page.index('<ul class="nav-links">') : page.index("API docs")]
    assert nav.index(">Pools</a>") < nav.index(">Difficulty</a>") < nav.index(">Analytics</a>")
