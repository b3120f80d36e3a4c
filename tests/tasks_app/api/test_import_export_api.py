from __future__ import annotations

import gzip
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from tasks_app.models import Task, TaskVersion
from tests.factories import make_task

pytestmark = pytest.mark.django_db
WRITE = ["read", "write"]


def humaneval_line(n: int, **overrides) -> dict:
    row = {
        "task_id": f"Mine/{n}",
        "prompt": f'def triple_{n}(x):\n    """Return three times x."""\n',
        "canonical_solution": "    return 3 * x\n",
        "test": f"def check(candidate):\n    assert candidate({n}) == {3 * n}\n",
        "entry_point": f"triple_{n}",
    }
    row.update(overrides)
    return row


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_raw_gzip_body_imports_and_a_second_import_creates_nothing(curator, api_as):
    body = gzip.compress(jsonl(humaneval_line(1), humaneval_line(2)))
    client = api_as(curator, WRITE)
    first = client.post("/api/v1/import/", body, content_type="application/gzip")
    assert first.status_code == 200, first.json()
    assert (first.json()["created"], first.json()["format"]) == (2, "humaneval")
    second = client.post("/api/v1/import/?format=humaneval", body, content_type="application/gzip")
    assert (second.json()["created"], second.json()["unchanged"]) == (0, 2)
    assert TaskVersion.objects.count() == 2


def test_a_multipart_upload_with_a_dry_run_writes_nothing(curator, api_as):
    upload = SimpleUploadedFile("tasks.jsonl", jsonl(humaneval_line(1)), content_type="application/x-ndjson")
    response = api_as(curator, WRITE).post("/api/v1/import/?dry_run=1", {"file": upload}, format="multipart")
    assert response.status_code == 200 and response.json()["dry_run"] is True
    assert response.json()["created"] == 1 and Task.objects.count() == 0


def test_one_bad_line_rejects_the_file_with_its_line_number(curator, api_as):
    body = jsonl(humaneval_line(1), humaneval_line(2, canonical_solution="    return (\n"))
    response = api_as(curator, WRITE).post("/api/v1/import/", body, content_type="application/x-ndjson")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "import_rejected" and "line 2" in error["message"]
    assert error["details"]["errors"][0]["line"] == 2 and error["details"]["created"] == 0
    assert Task.objects.count() == 0


def test_an_import_without_a_file_is_a_400(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/import/", {"other": "x"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()["error"]["details"]


@override_settings(TASKS_MAX_IMPORT_FILE_BYTES=1000)
def test_an_upload_over_the_limit_is_a_413(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/import/", b"x" * 5000, content_type="application/x-ndjson")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_import_needs_the_write_scope(curator, api_as):
    response = api_as(curator, ["read"]).post(
        "/api/v1/import/", jsonl(humaneval_line(1)), content_type="application/x-ndjson"
    )
    assert response.status_code == 403 and Task.objects.count() == 0


def test_export_streams_native_jsonl_that_imports_back(curator, api_as):
    make_task(owner=curator, slug="one")
    make_task(owner=curator, slug="two", tags=["strings"])
    response = api_as(curator, ["read", "export"]).get("/api/v1/export/?tag=strings")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(line)["slug"] for line in lines] == ["two"]
    again = api_as(curator, WRITE).post(
        "/api/v1/import/", "\n".join(lines).encode(), content_type="application/x-ndjson"
    )
    assert again.json()["unchanged"] == 1
