"""A snapshot's export over HTTP: streamed, gzipped on request, cached by its hash,
hidden tests only with their scope, and loadable by Hugging Face `datasets` as it is."""

from __future__ import annotations

import gzip
import json

import pytest
from django.urls import reverse

from tests.trainer_bridge.test_pools import _approved
from trainer_bridge.services.pools import pool_create, snapshot_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot(curator, reviewer):
    for i in range(3):
        _approved(curator, reviewer, f"task-{i}", tags=("arithmetic", "basics"))
    pool = pool_create(slug="basics", title="Basics", criteria={})
    return snapshot_create(pool=pool)[0]


def _url(snapshot, **query):
    base = reverse("api-snapshot-export", args=[snapshot.pool.slug, snapshot.hash])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_the_export_loads_with_hugging_face_datasets(snapshot, trainer, api_as, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    response = api_as(trainer, ["read", "export"]).get(_url(snapshot))
    assert response.status_code == 200 and response["ETag"] == f'"{snapshot.hash}"'
    assert response["Content-Type"] == "application/x-ndjson"
    path = tmp_path / "export.jsonl"
    path.write_bytes(_body(response))
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert loaded.num_rows == 3 and loaded["task_id"] == ["task-0", "task-1", "task-2"]
    first = loaded[0]
    assert first["prompt"][0]["role"] == "system" and "Define `add`" in first["prompt"][1]["content"]
    assert first["version_hash"] == snapshot.members.get(position=0).content_hash and first["tags"] == [
        "arithmetic",
        "basics",
    ]
    assert first["limits"] == {"time_limit_s": 5.0, "memory_limit_mb": 128}
    assert "hidden" not in first["tests"] and first["tests"]["visible"] == ["assert add(1, 2) == 3"]


def test_hidden_tests_need_their_scope_and_json_gzip_and_etags_work(snapshot, trainer, api_as):
    with_tests = api_as(trainer, ["read", "export", "export:tests"])
    records = [json.loads(line) for line in _body(with_tests.get(_url(snapshot))).splitlines()]
    assert records[0]["tests"]["hidden"] == ["assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
    zipped = with_tests.get(_url(snapshot, format="json", gzip=1))
    assert zipped["Content-Encoding"] == "gzip"
    assert [r["task_id"] for r in json.loads(gzip.decompress(_body(zipped)))] == ["task-0", "task-1", "task-2"]
    cached = with_tests.get(_url(snapshot), HTTP_IF_NONE_MATCH=f'"{snapshot.hash}"')
    assert cached.status_code == 304 and cached["ETag"] == f'"{snapshot.hash}"'
    assert with_tests.get(_url(snapshot), HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_bad_requests_get_the_error_shape(snapshot, trainer, api_as):
    client = api_as(trainer, ["read", "export"])
    bad_format = client.get(_url(snapshot, format="xml"))
    assert bad_format.status_code == 400 and "format" in bad_format.json()["error"]["details"]
    missing = client.get(reverse("api-snapshot-export", args=["basics", "0" * 64]))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    no_scope = api_as(trainer, ["read"]).get(_url(snapshot))
    assert no_scope.status_code == 403 and "export" in no_scope.json()["error"]["message"]


def test_every_record_matches_the_documented_json_schema(snapshot, trainer, api_as):
    from pathlib import Path

    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "trainer_bridge" / "export_schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for scopes in (["read", "export"], ["read", "export", "export:tests"]):
        for line in _body(api_as(trainer, scopes).get(_url(snapshot))).splitlines():
            jsonschema.validate(json.loads(line), schema)
