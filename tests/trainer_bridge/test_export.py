"""A snapshot's export over HTTP: streamed, gzipped on request, cached by its hash,
hidden tests only with their scope, and loadable by Hugging Face `datasets` as it is,
as JSON Lines, JSON and Parquet."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from django.db import connection
from django.urls import reverse

from tests.trainer_bridge.test_pools import _approved
from trainer_bridge import export
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


def test_the_export_loads_with_hugging_face_datasets(snapshot, curator, api_as, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    response = api_as(curator, ["read", "export"]).get(_url(snapshot))
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
    assert first["generated_tests"] == []  # none of its hidden tests was generated


def test_hidden_tests_need_their_scope_and_json_gzip_and_etags_work(snapshot, curator, api_as):
    with_tests = api_as(curator, ["read", "export", "export:tests"])
    records = [json.loads(line) for line in _body(with_tests.get(_url(snapshot))).splitlines()]
    assert records[0]["tests"]["hidden"] == ["assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
    zipped = with_tests.get(_url(snapshot, format="json", gzip=1))
    assert zipped["Content-Encoding"] == "gzip"
    assert [r["task_id"] for r in json.loads(gzip.decompress(_body(zipped)))] == ["task-0", "task-1", "task-2"]
    cached = with_tests.get(_url(snapshot), HTTP_IF_NONE_MATCH=f'"{snapshot.hash}"')
    assert cached.status_code == 304 and cached["ETag"] == f'"{snapshot.hash}"'
    assert with_tests.get(_url(snapshot), HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_bad_requests_get_the_error_shape(snapshot, curator, api_as):
    client = api_as(curator, ["read", "export"])
    bad_format = client.get(_url(snapshot, format="xml"))
    assert bad_format.status_code == 400 and "format" in bad_format.json()["error"]["details"]
    missing = client.get(reverse("api-snapshot-export", args=["basics", "0" * 64]))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    no_scope = api_as(curator, ["read"]).get(_url(snapshot))
    assert no_scope.status_code == 403 and "export" in no_scope.json()["error"]["message"]


def test_every_record_matches_the_documented_json_schema(snapshot, curator, api_as):
    from pathlib import Path

    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "trainer_bridge" / "export_schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for scopes in (["read", "export"], ["read", "export", "export:tests"]):
        for line in _body(api_as(curator, scopes).get(_url(snapshot))).splitlines():
            jsonschema.validate(json.loads(line), schema)


def _parquet(response):
    import pyarrow.parquet as pq

    assert response.status_code == 200 and response["Content-Type"] == "application/vnd.apache.parquet"
    return pq.read_table(io.BytesIO(_body(response)))


def test_the_parquet_export_loads_with_pyarrow_pandas_and_datasets(snapshot, curator, api_as, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets
    import pandas as pd
    import pyarrow.parquet as pq

    # Accept-Encoding is an offer most clients make: Parquet goes out as it is, never gzipped.
    response = api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet"), HTTP_ACCEPT_ENCODING="gzip")
    assert "Content-Encoding" not in response and response["ETag"] == f'"{snapshot.hash}"'
    assert response["Content-Disposition"].endswith('.parquet"')
    path = tmp_path / "export.parquet"
    path.write_bytes(_body(response))

    table = pq.read_table(path)
    assert table.schema == export.parquet_schema()
    jsonl = [json.loads(line) for line in _body(api_as(curator, ["read", "export"]).get(_url(snapshot))).splitlines()]
    rows = table.to_pylist()
    for row, record in zip(rows, jsonl, strict=True):
        assert row["tests"].pop("hidden") is None  # a column of every file; null without export:tests
        # One struct type a column: the default comparator ({}) is a struct of nulls.
        assert row.pop("comparator") == dict.fromkeys(("mode", "abs_tol", "rel_tol", "language", "source"))
        assert record.pop("comparator") == {} and record["language"] == "python"
        assert row == record  # the very records the JSONL export writes, in the same order

    frame = pd.read_parquet(path)
    assert list(frame["task_id"]) == ["task-0", "task-1", "task-2"]
    assert list(frame["tags"][0]) == ["arithmetic", "basics"] and frame["limits"][0]["memory_limit_mb"] == 128

    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert loaded.num_rows == 3 and loaded["task_id"] == ["task-0", "task-1", "task-2"]
    first = loaded[0]
    assert first["prompt"][0]["role"] == "system" and "Define `add`" in first["prompt"][1]["content"]
    assert first["version_hash"] == snapshot.members.get(position=0).content_hash
    assert first["limits"] == {"time_limit_s": 5.0, "memory_limit_mb": 128}
    assert first["tests"]["visible"] == ["assert add(1, 2) == 3"] and first["tests"]["hidden"] is None


def test_parquet_holds_hidden_tests_only_with_their_scope_and_refuses_gzip(snapshot, curator, api_as):
    with_tests = _parquet(api_as(curator, ["read", "export", "export:tests"]).get(_url(snapshot, format="parquet")))
    assert with_tests.column("task_id").to_pylist() == ["task-0", "task-1", "task-2"]
    assert with_tests.column("tests").to_pylist()[0]["hidden"] == ["assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
    without = _parquet(api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet")))
    assert [tests["hidden"] for tests in without.column("tests").to_pylist()] == [None, None, None]

    refused = api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet", gzip=1))
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "invalid" and "gzip" in error["details"] and "compressed" in error["message"]


def test_parquet_is_streamed_a_row_group_per_chunk(curator, reviewer, api_as, monkeypatch):
    import pyarrow.parquet as pq

    for i in range(7):
        _approved(curator, reviewer, f"task-{i}", tags=("basics",))
    snapshot = snapshot_create(pool=pool_create(slug="seven", title="Seven", criteria={}))[0]
    monkeypatch.setattr(export, "CHUNK", 3)  # 7 members: three chunks, as 1,500 would be with 500

    chunks = [c for c in api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet")).streaming_content]
    # The magic, then a piece per row group as it is written, the footer last: never the file at once.
    assert len(chunks) >= 3 and all(chunks[:-1]) and chunks[0].startswith(b"PAR1")
    parquet = pq.ParquetFile(io.BytesIO(b"".join(chunks)))
    assert [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)] == [3, 3, 1]
    assert parquet.read().column("task_id").to_pylist() == [f"task-{i}" for i in range(7)]
    group = parquet.metadata.row_group(0)
    columns = {c.path_in_schema: c for c in map(group.column, range(group.num_columns))}
    assert columns["task_id"].compression == "ZSTD" and columns["task_id"].is_stats_set
    # No min/max of the free text: the footer, held until the end, stays small.
    assert not columns["prompt.list.element.content"].is_stats_set


TRICKY = 'Return "a" + \\b\tthen é, 😀, \u2028 and a bell \x07 (backslash \\).'
STDIO = {
    "suite_kind": "stdio",
    "entry_point": "",
    "starter_code": "",
    "visible_tests": [{"input": "1 2\n", "output": "3\n"}],
    "hidden_tests": [{"input": "-1 1\n", "output": "0\n"}],
    "solutions": [
        {"role": "reference", "label": "ref", "code": "a, b = map(int, input().split())\nprint(a + b)\n"},
        {"role": "adversarial", "label": "zero", "code": "print(0)\n"},
    ],
}


# The second hidden test of "c-plain" came from a generated input (what accepting a
# proposed counterexample records), with a non-ASCII generator name.
GENERATED = [{"hidden_index": 1, "generator": "typed-mutation é", "seed": 2**40, "reason": "counterexample",
              "mutant": "a" * 64, "from_version": "b" * 64}]  # fmt: skip


@pytest.fixture
def mixed(curator, reviewer):
    """A snapshot with awkward text, an stdio task, and figures of every float form,
    frozen by hand as a fit would leave them (the services give these tasks none)."""
    from trainer_bridge.models import Snapshot, SnapshotMember

    _approved(curator, reviewer, "a-tricky", tags=("text",), statement=TRICKY,
              visible_tests=["assert add(1, 2) == 3  # é \\ \"q\""])  # fmt: skip
    _approved(curator, reviewer, "b-stdio", tags=("io",), **STDIO)
    _approved(curator, reviewer, "c-plain", tags=(), generated_tests=GENERATED)
    frozen = snapshot_create(pool=pool_create(slug="mixed", title="Mixed", criteria={}))[0]
    snapshot = Snapshot.objects.create(pool=frozen.pool, hash="f" * 64, criteria={}, size=frozen.size)
    figures = [
        (1e-07, "measured", "LEARNABLE", 0.1, ["text", 'ünï "q" \\']),
        (float("nan"), "predicted", "TOO_HARD", 1e22, ["io"]),
        (None, "", "", None, []),
    ]
    members = frozen.members.order_by("position")
    for member, (difficulty, source, band, noise, tags) in zip(members, figures, strict=True):
        SnapshotMember.objects.create(snapshot=snapshot, position=member.position, task=member.task,
                                      version=member.version, content_hash=member.content_hash, band=band,
                                      difficulty=difficulty, difficulty_source=source, reward_noise=noise,
                                      tags=tags)  # fmt: skip
    return snapshot


@pytest.mark.parametrize("with_hidden_tests", [False, True])
def test_json_lines_are_the_records_as_json_dumps_writes_them(mixed, with_hidden_tests):
    records = list(export.records(mixed, with_hidden_tests=with_hidden_tests))
    assert [r["task_id"] for r in records] == ["a-tricky", "b-stdio", "c-plain"]
    assert [json.loads(case) for case in records[1]["tests"]["visible"]] == [{"input": "1 2\n", "output": "3\n"}]
    assert [r["generated_tests"] for r in records] == [[], [], GENERATED]  # with the hidden tests or without
    expected = [json.dumps(r, ensure_ascii=False) for r in records]
    # Lines end at "\n" only: a line may hold U+2028, which str.splitlines would cut at.
    body = b"".join(export.jsonl_chunks(mixed, with_hidden_tests=with_hidden_tests)).decode()
    array = b"".join(export.json_chunks(mixed, with_hidden_tests=with_hidden_tests)).decode()
    if connection.vendor != "postgresql":  # SQLite: Django's JSON text (non-ASCII escaped), and no NaN
        assert [json.loads(line) for line in body.split("\n")[:-1]] == json.loads(array) == records
        return
    assert body.split("\n") == [*expected, ""]
    assert array == "[" + ",".join(expected) + "]"


def test_a_snapshot_mixing_stdio_and_functions_loads_with_datasets(mixed, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(export.jsonl_chunks(mixed, with_hidden_tests=True)))
    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    assert rows["task_id"] == ["a-tricky", "b-stdio", "c-plain"]
    assert json.loads(rows[1]["tests"]["hidden"][0]) == {"input": "-1 1\n", "output": "0\n"}


def test_parquet_holds_stdio_cases_as_their_json_text(mixed):
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(b"".join(export.parquet_chunks(mixed, with_hidden_tests=True))))
    rows = table.to_pylist()
    assert [r["task_id"] for r in rows] == ["a-tricky", "b-stdio", "c-plain"]
    assert rows[0]["prompt"][1]["content"].startswith(TRICKY) and rows[0]["tags"] == ["text", 'ünï "q" \\']
    assert [json.loads(case) for case in rows[1]["tests"]["visible"]] == [{"input": "1 2\n", "output": "3\n"}]
    assert [json.loads(case) for case in rows[1]["tests"]["hidden"]] == [{"input": "-1 1\n", "output": "0\n"}]
    assert rows[0]["difficulty"] == 1e-07 and rows[1]["reward_noise"] == 1e22 and rows[2]["difficulty"] is None
    if connection.vendor == "postgresql":  # SQLite stores NaN as NULL
        assert rows[1]["difficulty"] != rows[1]["difficulty"]  # NaN stays NaN
    assert rows[2]["band"] is None and rows[2]["tags"] == []
    assert [r["generated_tests"] for r in rows] == [[], [], GENERATED]


def test_every_record_says_which_hidden_tests_were_generated_with_or_without_them(mixed, curator, api_as):
    """The record of a version whose hidden tests include a generated one carries its
    generator, seed, reason and mutant, whether or not the token may read the tests,
    in JSON Lines and Parquet, and the JSON schema holds it to its shape."""
    from pathlib import Path

    import jsonschema
    import pyarrow.parquet as pq

    schema = json.loads((Path(__file__).resolve().parents[2] / "trainer_bridge" / "export_schema.json").read_text())
    for with_hidden_tests in (False, True):
        lines = b"".join(export.jsonl_chunks(mixed, with_hidden_tests=with_hidden_tests)).decode().split("\n")[:-1]
        records = [json.loads(line) for line in lines]
        assert records[2]["generated_tests"] == GENERATED and records[0]["generated_tests"] == []
        for record in records:  # this snapshot's figures are out of range on purpose: its tests' part only
            jsonschema.validate(record["generated_tests"], schema["properties"]["generated_tests"])
        table = pq.read_table(io.BytesIO(b"".join(export.parquet_chunks(mixed, with_hidden_tests=with_hidden_tests))))
        assert table.column("generated_tests").to_pylist() == [[], [], GENERATED]
    hidden = next(r for r in records if r["task_id"] == "c-plain")["tests"]["hidden"]
    assert hidden[GENERATED[0]["hidden_index"]] == "assert add(10, 5) == 15"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**GENERATED[0], "reason": "guess"}], schema["properties"]["generated_tests"])


def test_a_checker_task_in_another_language_exports_its_language_and_checker(curator, reviewer, api_as):
    checker = "import sys\nsys.exit(0)\n"
    _approved(curator, reviewer, "pair-cpp", language="cpp17", suite_kind="stdio", entry_point="",
              starter_code="int main() {}\n", test_setup="", visible_tests=[{"input": "1\n", "output": "1\n"}],
              hidden_tests=[{"input": "2\n", "output": "2\n"}, {"input": "3\n", "output": "3\n"}],
              comparator={"mode": "checker", "language": "python", "source": checker},
              solutions=[{"role": "reference", "label": "ref", "code": "int main() { return 0; }\n"}])  # fmt: skip
    pool = pool_create(slug="cpp", title="C++", criteria={"languages": ["cpp17"]})
    snapshot = snapshot_create(pool=pool)[0]
    lines = _body(api_as(curator, ["read", "export"]).get(_url(snapshot))).decode().splitlines()
    (record,) = [json.loads(line) for line in lines]
    assert record["language"] == "cpp17"
    assert record["comparator"] == {"mode": "checker", "language": "python", "source": checker}
    prompt = record["prompt"][1]["content"]
    assert "Write the program in C++17 (g++)." in prompt and "```cpp\nint main() {}\n```" in prompt
    # The system message asks for that language too, in the fence the reward API takes for it.
    assert record["prompt"][0]["content"] == (
        "You are an expert programmer. Answer with one complete C++17 (g++) program in a single ```cpp fenced block."
    )
    # The text the export writes is the record json.dumps writes, byte for byte.
    assert lines[0] == json.dumps(next(export.records(snapshot, with_hidden_tests=False)), ensure_ascii=False)
    table = _parquet(api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet")))
    assert table.to_pylist()[0]["comparator"]["source"] == checker


def test_an_interactive_task_exports_its_interactor_and_tells_the_model_to_flush(curator, reviewer, api_as):
    interactor = "import sys\nprint(1, flush=True)\nsys.exit(0 if input() == '! 1' else 1)\n"
    _approved(curator, reviewer, "guess-interactive", suite_kind="stdio", entry_point="", starter_code="",
              test_setup="", visible_tests=[{"input": "1 1\n", "output": "1\n"}],
              hidden_tests=[{"input": "1 1\n", "output": "1\n"}, {"input": "2 1\n", "output": "1\n"}],
              comparator={"mode": "interactor", "language": "python", "source": interactor},
              solutions=[{"role": "reference", "label": "ref",
                          "code": "input()\nprint('! 1', flush=True)\n"}])  # fmt: skip
    pool = pool_create(slug="interactive", title="Interactive", criteria={})
    snapshot = snapshot_create(pool=pool)[0]
    lines = _body(api_as(curator, ["read", "export"]).get(_url(snapshot))).decode().splitlines()
    (record,) = [json.loads(line) for line in lines if json.loads(line)["task_id"] == "guess-interactive"]
    assert record["comparator"] == {"mode": "interactor", "language": "python", "source": interactor}
    prompt = record["prompt"][1]["content"]
    assert export.INTERACTIVE_NOTE in prompt and "Read from standard input and write" not in prompt
    assert json.dumps(next(r for r in export.records(snapshot, with_hidden_tests=False)
                           if r["task_id"] == "guess-interactive"), ensure_ascii=False) in lines  # fmt: skip


def test_a_function_task_exports_its_calls_and_a_prompt_that_declares_the_function(curator, reviewer, api_as):
    from tests.evaluation.function_samples import HIDDEN, RIGHT, SIGNATURE, VISIBLE

    _approved(curator, reviewer, "top-k-rust", language="rust", suite_kind="function_calls", entry_point="top_k",
              starter_code="", test_setup="", signature=SIGNATURE, visible_tests=VISIBLE, hidden_tests=HIDDEN,
              solutions=[{"role": "reference", "label": "ref", "code": RIGHT["rust"]}])  # fmt: skip
    pool = pool_create(slug="rust", title="Rust", criteria={"languages": ["rust"]})
    snapshot = snapshot_create(pool=pool)[0]
    lines = _body(api_as(curator, ["read", "export"]).get(_url(snapshot))).decode()
    (record,) = [json.loads(line) for line in lines.splitlines()]
    assert record["suite_kind"] == "function_calls" and record["language"] == "rust"
    assert [json.loads(case) for case in record["tests"]["visible"]] == VISIBLE
    prompt = record["prompt"][1]["content"]
    assert "```rust\nfn top_k(xs: Vec<i64>, k: i64) -> Vec<i64> {\n}\n```" in prompt, prompt
    assert "no `main` of your own" in prompt
    # The text the export writes is the record json.dumps writes, byte for byte.
    assert lines.splitlines()[0] == json.dumps(next(export.records(snapshot, with_hidden_tests=False)),
                                               ensure_ascii=False)  # fmt: skip
    table = _parquet(api_as(curator, ["read", "export"]).get(_url(snapshot, format="parquet")))
    assert table.to_pylist()[0]["suite_kind"] == "function_calls"
