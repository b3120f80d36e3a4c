"""Background export builds: a worker writes the streamed export's very bytes to a
file, with progress, atomically; the same request reuses it; the download carries
its SHA-256 as ETag; a failure leaves no file; scopes decide who builds and reads."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from tasks_app.errors import ValidationFailed
from tests.trainer_bridge.test_pools import _approved
from trainer_bridge import export
from trainer_bridge.models import ExportBuild
from trainer_bridge.services.builds import build_file, build_request, build_run, exports_dir
from trainer_bridge.services.pools import pool_create, snapshot_create
from trainer_bridge.tasks import build_export

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _exports_in_tmp(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"


@pytest.fixture
def snapshot(curator, reviewer):
    for i in range(5):
        _approved(curator, reviewer, f"task-{i}", tags=("arithmetic",))
    return snapshot_create(pool=pool_create(slug="basics", title="Basics", criteria={}))[0]


def _streamed(client, snapshot, **query) -> bytes:
    url = reverse("api-snapshot-export", args=[snapshot.pool.slug, snapshot.hash])
    response = client.get(url, query)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def _builds_url(snapshot) -> str:
    return reverse("api-snapshot-builds", args=[snapshot.pool.slug, snapshot.hash])


def _no_partial_files() -> bool:
    return not list(exports_dir().glob(".*.part")) if exports_dir().exists() else True


@pytest.mark.parametrize("fmt", ["jsonl", "json", "parquet"])
def test_a_build_writes_the_streamed_bytes_and_its_progress_moves_to_the_total(
    snapshot, curator, api_as, monkeypatch, fmt
):
    monkeypatch.setattr(export, "CHUNK", 2)  # 5 rows: progress is recorded every 2
    build, created = build_request(snapshot=snapshot, format=fmt, with_hidden_tests=True, actor=curator)
    assert created and build.state == "queued" and build.rows_total == 5 and build.rows_done == 0

    # What a poller sees between chunks: the real chunks, watched as they are written.
    seen: list[int] = []
    real = export.FORMATS[fmt]

    def watched(snap, *, with_hidden_tests):
        for chunk in real.chunks(snap, with_hidden_tests=with_hidden_tests):
            seen.append(ExportBuild.objects.get(pk=build.pk).rows_done)
            yield chunk

    monkeypatch.setitem(export.FORMATS, fmt, dataclasses.replace(real, chunks=watched))
    assert build_export(str(build.pk)) == "done"
    assert seen == sorted(seen) and {2, 4} <= set(seen) and max(seen) < 5  # it moved while writing
    build.refresh_from_db()
    assert build.state == "done" and build.rows_done == build.rows_total == 5 and build.finished_at is not None
    monkeypatch.setitem(export.FORMATS, fmt, real)
    content = build_file(build=build).read_bytes()
    assert content == _streamed(api_as(curator, ["export", "export:tests"]), snapshot, format=fmt)
    assert build.size_bytes == len(content) and build.sha256 == hashlib.sha256(content).hexdigest()
    assert _no_partial_files()


def test_gzipped_builds_match_their_streams_and_parquet_refuses_gzip(snapshot, curator, api_as):
    client = api_as(curator, ["export"])
    for fmt in ("json", "jsonl"):
        build, _ = build_request(snapshot=snapshot, format=fmt, gzip=True)
        build = build_run(build_id=build.pk)
        content = build_file(build=build).read_bytes()
        assert build_file(build=build).name.endswith(f".{fmt}.gz")
        assert content == _streamed(client, snapshot, format=fmt, gzip=1)
        assert gzip.decompress(content).startswith(b"[" if fmt == "json" else b'{"task_id": "task-0"')
    with pytest.raises(ValidationFailed) as refused:
        build_request(snapshot=snapshot, format="parquet", gzip=True)
    assert "gzip" in refused.value.details
    with pytest.raises(ValidationFailed) as unknown:
        build_request(snapshot=snapshot, format="xml", gzip="yes")
    assert set(unknown.value.details) == {"format", "gzip"}


def test_the_same_request_reuses_the_build_and_running_it_again_does_nothing(snapshot, curator):
    first, created = build_request(snapshot=snapshot, format="jsonl", actor=curator)
    again, created_again = build_request(snapshot=snapshot, format="jsonl")
    assert created and not created_again and again.pk == first.pk  # queued: the same build
    done = build_run(build_id=first.pk)
    path = build_file(build=done)
    written = path.stat().st_mtime_ns
    assert build_run(build_id=first.pk).sha256 == done.sha256 and path.stat().st_mtime_ns == written
    reused, created_third = build_request(snapshot=snapshot, format="jsonl")
    assert not created_third and reused.pk == first.pk  # done: the same file
    other, created_other = build_request(snapshot=snapshot, format="jsonl", with_hidden_tests=True)
    assert created_other and other.pk != first.pk  # other options: another build
    path.unlink()  # var/ cleared: the record alone is not a build
    rebuilt, created_rebuilt = build_request(snapshot=snapshot, format="jsonl")
    assert created_rebuilt and rebuilt.pk != first.pk


def test_a_live_worker_keeps_its_build_and_a_dead_ones_build_is_taken_over(snapshot, settings):
    build, _ = build_request(snapshot=snapshot, format="jsonl")
    ExportBuild.objects.filter(pk=build.pk).update(state="running", started_at=timezone.now())
    assert build_run(build_id=build.pk).state == "running"  # held by a live worker: untouched
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 120)
    ExportBuild.objects.filter(pk=build.pk).update(started_at=long_ago)
    exports_dir().mkdir(parents=True, exist_ok=True)
    leftover = exports_dir() / f".{build.pk}.dead.part"
    leftover.write_bytes(b'{"half a')
    taken = build_run(build_id=build.pk)
    assert taken.state == "done" and taken.started_at > long_ago and not leftover.exists()


def test_a_failed_build_leaves_no_file_and_says_why(snapshot, monkeypatch):
    real = export.FORMATS["jsonl"]

    # A disk that fills halfway cannot be made here on demand: the chunks fail instead,
    # after some bytes were written.
    def failing(snap, *, with_hidden_tests):
        chunks = real.chunks(snap, with_hidden_tests=with_hidden_tests)
        yield next(chunks)
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(export.FORMATS, "jsonl", dataclasses.replace(real, chunks=failing))
    build, _ = build_request(snapshot=snapshot, format="jsonl")
    assert build_export(str(build.pk)) == "failed"
    build.refresh_from_db()
    assert build.state == "failed" and "No space left on device" in build.error and build.path == ""
    assert not (exports_dir() / f"{build.pk}.jsonl").exists() and _no_partial_files()
    assert list(exports_dir().iterdir()) == []
    monkeypatch.setitem(export.FORMATS, "jsonl", real)
    retry, created = build_request(snapshot=snapshot, format="jsonl")
    assert created and retry.pk != build.pk  # a failed build is not reused


def test_the_api_queues_reports_and_downloads_a_build_with_its_etag(
    snapshot, curator, api_as, django_capture_on_commit_callbacks
):
    client = api_as(curator, ["read", "export"])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        made = client.post(_builds_url(snapshot), {"format": "jsonl", "gzip": False}, format="json")
    assert made.status_code == 202, made.content
    body = made.json()
    assert len(queued) == 1  # enqueued once the request's transaction commits
    assert body["state"] == "queued" and body["rows_total"] == 5 and body["progress"] == 0
    assert body["download_url"] is None and body["with_hidden_tests"] is False
    assert made["Location"] == body["url"]
    early = client.get(reverse("api-export-build-download", args=[body["id"]]))
    assert early.status_code == 409 and early.json()["error"]["code"] == "conflict"

    build_export(body["id"])
    status = client.get(body["url"])
    assert status.status_code == 200
    done = status.json()
    assert done["state"] == "done" and done["progress"] == 1 and done["rows_done"] == 5
    download = client.get(done["download_url"])
    assert download.status_code == 200 and download["ETag"] == f'"{done["sha256"]}"'
    content = b"".join(download.streaming_content)
    assert content == _streamed(client, snapshot) and hashlib.sha256(content).hexdigest() == done["sha256"]
    assert download["Content-Type"] == "application/x-ndjson"
    assert f"basics-{snapshot.hash[:12]}.jsonl" in download["Content-Disposition"]
    cached = client.get(done["download_url"], HTTP_IF_NONE_MATCH=f'"{done["sha256"]}"')
    assert cached.status_code == 304 and cached["ETag"] == download["ETag"]

    with django_capture_on_commit_callbacks(execute=False) as requeued:
        reused = client.post(_builds_url(snapshot), {"format": "jsonl"}, format="json")
    assert reused.status_code == 202 and reused.json()["id"] == body["id"] and reused.json()["state"] == "done"
    assert requeued == []  # done: nothing to queue


def test_scopes_decide_who_builds_and_who_reads_hidden_tests(snapshot, curator, reviewer, trainer, api_as):
    no_export = api_as(reviewer, ["read"])
    refused = no_export.post(_builds_url(snapshot), {"format": "jsonl"}, format="json")
    assert refused.status_code == 403 and "export" in refused.json()["error"]["message"]
    assert api_as(trainer, ["read"]).post(_builds_url(snapshot), {}, format="json").status_code == 403

    plain = api_as(reviewer, ["export"])
    asked = plain.post(_builds_url(snapshot), {"format": "jsonl", "with_hidden_tests": True}, format="json")
    assert asked.status_code == 403 and "export:tests" in asked.json()["error"]["message"]
    without = plain.post(_builds_url(snapshot), {"format": "jsonl"}, format="json").json()
    assert without["with_hidden_tests"] is False  # left out: what the scope allows

    tests_token = api_as(curator, ["export", "export:tests"])
    hidden = tests_token.post(_builds_url(snapshot), {"format": "jsonl"}, format="json").json()
    assert hidden["with_hidden_tests"] is True and hidden["id"] != without["id"]
    build_export(hidden["id"])
    download = reverse("api-export-build-download", args=[hidden["id"]])
    assert plain.get(download).status_code == 403  # the file has hidden tests
    assert tests_token.get(download).status_code == 200
    assert b'"hidden"' in b"".join(tests_token.get(download).streaming_content)
    assert no_export.get(reverse("api-export-build", args=[hidden["id"]])).status_code == 403


def test_bad_build_requests_get_the_error_shape(snapshot, curator, api_as):
    client = api_as(curator, ["export"])
    bad = client.post(_builds_url(snapshot), {"format": "xml"}, format="json")
    assert bad.status_code == 400 and "format" in bad.json()["error"]["details"]
    odd = client.post(_builds_url(snapshot), {"format": "jsonl", "gzip": "sometimes"}, format="json")
    assert odd.status_code == 400 and "gzip" in odd.json()["error"]["details"]
    parquet = client.post(_builds_url(snapshot), {"format": "parquet", "gzip": True}, format="json")
    assert parquet.status_code == 400 and "gzip" in parquet.json()["error"]["details"]
    missing = client.post(reverse("api-snapshot-builds", args=["basics", "0" * 64]), {}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    for nonsense in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        gone = client.get(reverse("api-export-build", args=[nonsense]))
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert Path(exports_dir()).exists() is False  # nothing was built
