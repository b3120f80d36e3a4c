"""Repository tasks through the REST API: archive uploads, the version's repository fields,
one file and the whole tree as downloads, the error shape for a bad archive."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tasks_app.models import Blob, Task, TaskVersion
from tests.tasks_app import repository_sample as sample

pytestmark = pytest.mark.django_db
WRITE = ["read", "write"]
SLUG = "textstats-whitespace"


def changed_members() -> dict[str, bytes]:
    """The sample with one more file, one more pass_to_pass test and a reworded reference."""
    entries = sample.members()
    entries["repo/CHANGES.md"] = b"- split on any whitespace\n"
    meta = json.loads(entries["task.json"])
    meta["pass_to_pass"] = [*meta["pass_to_pass"], "tests/test_whitespace.py::test_it_is_new"]
    hidden = entries["hidden_tests/tests/test_whitespace.py"] + b"\n\ndef test_it_is_new():\n    assert True\n"
    entries["hidden_tests/tests/test_whitespace.py"] = hidden
    entries["task.json"] = json.dumps(meta).encode()
    return entries


def upload(client, url: str, data: bytes, name: str = "task.zip", **fields):
    return client.post(url, {"file": SimpleUploadedFile(name, data), **fields}, format="multipart")


# -- API ------------------------------------------------------------------------------------------


def test_an_archive_uploaded_through_the_api_creates_a_repository_task(curator, api_as):
    client = api_as(curator, WRITE)
    response = upload(client, "/api/v1/archives/", sample.zip_bytes())
    assert response.status_code == 201, response.json()
    version = response.json()["version"]
    assert version["suite_kind"] == "repository" and version["number"] == 1
    repo = version["repository"]
    assert repo["manifest"]["textstats/words.py"]["size"] == len(sample.members()["repo/textstats/words.py"])
    assert "data" not in json.dumps(repo["manifest"])  # the manifest, never the bytes
    assert repo["fail_to_pass"] == sorted(sample.task_meta()["fail_to_pass"])
    assert "tests/test_whitespace.py" in repo["hidden_test_files"]
    assert {s["role"] for s in version["solutions"]} == {"reference", "adversarial"}
    assert Task.objects.get(slug=SLUG).tags.filter(name="sample").exists()


def test_a_new_version_comes_from_a_raw_tar_body_and_the_same_archive_again_changes_nothing(curator, api_as):
    client = api_as(curator, WRITE)
    assert upload(client, "/api/v1/archives/", sample.zip_bytes()).status_code == 201
    url = f"/api/v1/tasks/{SLUG}/versions/archive/?changelog=More+tests&base_number=1"
    response = client.post(url, sample.tar_bytes(changed_members()), content_type="application/gzip")
    assert response.status_code == 201, response.json()
    assert response.json()["version"]["number"] == 2 and response.json()["version"]["changelog"] == "More tests"
    again = client.post(url.replace("base_number=1", "base_number=2"), sample.tar_bytes(changed_members()),
                        content_type="application/gzip")  # fmt: skip
    assert again.status_code == 200 and again.json()["created"] is False


def test_a_bad_archive_is_a_400_in_the_error_shape_naming_the_member_and_writes_nothing(curator, api_as):
    client = api_as(curator, WRITE)
    entries = {**sample.members(), "repo/../../etc/cron.d/x": b"* * * * * root true\n"}
    response = upload(client, "/api/v1/archives/", sample.tar_bytes(entries), name="t.tgz")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "repo/../../etc/cron.d/x" in error["message"]
    assert (Task.objects.count(), TaskVersion.objects.count(), Blob.objects.count()) == (0, 0, 0)


def test_a_patch_that_does_not_apply_refuses_the_whole_upload(curator, api_as):
    entries = sample.members()
    entries["patches/adversarial/broken.diff"] = entries["patches/reference.diff"].replace(b"text.split", b"txt.split")
    response = upload(api_as(curator, WRITE), "/api/v1/archives/", sample.zip_bytes(entries))
    assert response.status_code == 400
    assert 'archive["patches/adversarial/broken.diff"]' in response.json()["error"]["details"]
    assert Blob.objects.count() == 0


def test_a_reviewer_token_without_write_cannot_upload(reviewer, api_as):
    response = upload(api_as(reviewer, ["read"]), "/api/v1/archives/", sample.zip_bytes())
    assert response.status_code == 403


def test_one_file_and_the_whole_tree_download_and_the_tar_is_the_same_every_time(curator, api_as):
    client = api_as(curator, WRITE)
    upload(client, "/api/v1/archives/", sample.zip_bytes())
    one = client.get(f"/api/v1/tasks/{SLUG}/versions/1/files/assets/logo.png")
    assert one.status_code == 200 and one.content == sample.members()["repo/assets/logo.png"]
    assert client.get(f"/api/v1/tasks/{SLUG}/versions/1/files/nope.py").status_code == 404
    first = client.get(f"/api/v1/tasks/{SLUG}/versions/1/tree/")
    assert first.status_code == 200 and client.get(f"/api/v1/tasks/{SLUG}/versions/1/tree/").content == first.content
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(first.content))) as archive:
        names = archive.getnames()
        assert archive.extractfile("textstats/words.py").read() == sample.members()["repo/textstats/words.py"]
        assert archive.getmember("scripts/run_tests.sh").mode == 0o755
    assert "tests/test_whitespace.py" not in names  # hidden tests are not in the tree


def test_adding_an_adversarial_patch_through_the_solutions_endpoint_makes_a_version(curator, api_as):
    client = api_as(curator, WRITE)
    upload(client, "/api/v1/archives/", sample.zip_bytes())
    patch = sample.members()["patches/reference.diff"].decode().replace("text.split()", "text.split(None)")
    body = {"role": "adversarial", "label": "none-split", "code": patch}
    response = client.post(f"/api/v1/tasks/{SLUG}/versions/1/solutions/", body, format="json")
    assert response.status_code == 201, response.json()
    version = TaskVersion.objects.get(task__slug=SLUG, number=2)
    assert version.repository["manifest"] == TaskVersion.objects.get(task__slug=SLUG, number=1).repository["manifest"]


def test_versions_stay_read_only_through_the_api(curator, api_as):
    client = api_as(curator, WRITE)
    upload(client, "/api/v1/archives/", sample.zip_bytes())
    assert client.patch(f"/api/v1/tasks/{SLUG}/versions/1/", {"repository": {}}, format="json").status_code == 405
