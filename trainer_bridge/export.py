"""Snapshot export records, one per task version, in the shape docs/export.md gives
(with its JSON Schema): loadable by Hugging Face `datasets` as it is.

Records are built from the snapshot's members a chunk at a time, so an export
holds one chunk in memory whatever the snapshot's size. The members are read
as bare tuples of the columns a record needs (one joined query on a server-side
cursor): model instances would load every column of each version and cost
more per row than the encoding does.

JSON Lines and JSON are written by `record_lines`, which puts each record's text
together from its columns instead of encoding a dict: the JSON columns (tags,
tests) go out as the database's text of them, never decoded and encoded again.
That about halves the cost of a row (bench/export.py); a test holds each line to
`json.dumps` of the record `records` makes, byte for byte. Parquet is written
from `records`, one row group a chunk, each sent as soon as it is written.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from django.db.models import TextField
from django.db.models.functions import Cast

from evaluation.sandbox import drivers
from evaluation.sandbox.languages import LANGUAGES as RUNTIMES
from trainer_bridge.models import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Answer with one complete Python solution in a single ```python fenced block."
)


def system_prompt(language: str) -> str:
    """What a task's record tells the model first: Python's prompt, or the same for the
    task's language and the fence the reward API's extraction takes for it."""
    runtime = RUNTIMES.get(language)
    if runtime is None:
        return SYSTEM_PROMPT
    return (
        f"You are an expert programmer. Answer with one complete {runtime.title} program in a single "
        f"```{runtime.fences[0]} fenced block."
    )


CHUNK = 500
PARQUET_CONTENT_TYPE = "application/vnd.apache.parquet"

# The order `records` unpacks them in; hidden tests are read only when exported.
_COLUMNS = (
    "task__slug",
    "content_hash",
    "difficulty",
    "difficulty_source",
    "band",
    "reward_noise",
    "tags",
    "version__number",
    "version__statement",
    "version__suite_kind",
    "version__entry_point",
    "version__starter_code",
    "version__test_setup",
    "version__visible_tests",
    "version__time_limit_s",
    "version__memory_limit_mb",
    # Which hidden tests were generated, and how (index, generator, seed, reason, mutant,
    # proposing version): metadata only, so it goes out whether or not the tests do.
    "version__generated_tests",
    # The solutions' language, and how a stdio task's output is judged (a comparator mode,
    # or a checker program with its source: judging logic, not tests, so it always goes).
    "version__language",
    "version__comparator",
    # function_calls: the typed signature, from which the prompt shows the declaration in
    # the task's language when the curator wrote no starter code.
    "version__signature",
)
_HIDDEN = "version__hidden_tests"
_JSON_COLUMNS = frozenset({"tags", "version__visible_tests", "version__generated_tests", "version__comparator",
                           "version__signature", _HIDDEN})  # fmt: skip
# The suite kinds whose tests are objects: each goes as its JSON text (`_cases`).
_OBJECT_CASES = ("stdio", "function_calls")

# One encoder for the whole module: json.dumps with a non-default option builds a
# new encoder on every call, which is a measurable share of a row's cost.
_encode = json.JSONEncoder(ensure_ascii=False).encode
_SYSTEM_MESSAGES = {language: _encode({"role": "system", "content": system_prompt(language)})
                    for language in ("python", *RUNTIMES)}  # fmt: skip


INTERACTIVE_NOTE = (
    "This task is interactive: a judge program answers what you write, so read its replies from standard "
    "input and flush standard output after every line you write."
)


def _interactive(comparator: Any) -> bool:
    """Whether a stdio task's comparator (a dict, or its JSON text) names an interactor."""
    if isinstance(comparator, str):
        if '"interactor"' not in comparator:  # the common case, without decoding a checker's source
            return False
        comparator = json.loads(comparator)
    return isinstance(comparator, dict) and comparator.get("mode") == "interactor"


def _user_prompt(statement: str, suite_kind: str, entry_point: str, starter_code: str, language: str,
                 comparator: Any = None, signature: Any = None) -> str:  # fmt: skip
    parts = [statement.strip()]
    if suite_kind == "function_calls" and not starter_code.strip() and signature:
        signature = json.loads(signature) if isinstance(signature, str) else signature
        starter_code = drivers.declaration(language, signature, entry_point)
    runtime = RUNTIMES.get(language)
    if runtime is not None:  # another language than Python: say which (and fence its starter code so)
        parts.append(f"Write the program in {runtime.title}.")
    if suite_kind == "stdio" and _interactive(comparator):
        parts.append(INTERACTIVE_NOTE)
    elif suite_kind == "stdio":
        parts.append("Read from standard input and write to standard output.")
    elif suite_kind == "function_calls" and language in ("java", "csharp"):
        parts.append(f"Define `{entry_point}` as a static method of a class `Solution`, with the signature below.")
    elif suite_kind == "function_calls":
        parts.append(f"Define `{entry_point}` with the signature below, and no `main` of your own.")
    elif entry_point:
        parts.append(f"Define `{entry_point}`.")
    if starter_code.strip():
        fence = runtime.fences[0] if runtime is not None else "python"
        parts.append(f"```{fence}\n{starter_code.rstrip()}\n```")
    return "\n\n".join(parts)


def member_rows(
    snapshot: Snapshot, *, with_hidden_tests: bool, json_as_text: bool = False
) -> Iterator[tuple[Any, ...]]:
    """The columns a record needs, member by member in the snapshot's order, fetched
    CHUNK rows at a time (the hidden tests last, and only when asked for). With
    `json_as_text` the JSON columns come as the database's JSON text of them."""
    columns: tuple[Any, ...] = (*_COLUMNS, _HIDDEN) if with_hidden_tests else _COLUMNS
    if json_as_text:
        columns = tuple(Cast(c, TextField()) if c in _JSON_COLUMNS else c for c in columns)
    return snapshot.members.order_by("position").values_list(*columns).iterator(chunk_size=CHUNK)


def records(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[dict[str, Any]]:
    """The snapshot's records in its order. `tests` always holds the setup and the
    visible tests; `hidden` only when `with_hidden_tests` (the export:tests scope).
    `generated_tests` always: which hidden tests were generated names them by index
    and gives away no test."""
    digest = snapshot.hash
    width = len(_COLUMNS)
    for row in member_rows(snapshot, with_hidden_tests=with_hidden_tests):
        (slug, content_hash, difficulty, difficulty_source, band, reward_noise, tags, number, statement, suite_kind,
         entry_point, starter_code, setup, visible, time_limit_s, memory_limit_mb, generated, language,
         comparator, signature) = row[:width]  # fmt: skip
        tests = {"setup": setup, "visible": _cases(suite_kind, visible)}
        if with_hidden_tests:
            tests["hidden"] = _cases(suite_kind, row[width])
        yield {
            "task_id": slug,
            "version": number,
            "version_hash": content_hash,
            "snapshot": digest,
            "prompt": [
                {"role": "system", "content": system_prompt(language)},
                {
                    "role": "user",
                    "content": _user_prompt(
                        statement, suite_kind, entry_point, starter_code, language, comparator, signature
                    ),
                },
            ],
            "suite_kind": suite_kind,
            "entry_point": entry_point,
            "difficulty": difficulty,
            "difficulty_source": difficulty_source or None,
            "band": band or None,
            "reward_noise": reward_noise,
            "tags": tags,
            "limits": {"time_limit_s": float(time_limit_s), "memory_limit_mb": int(memory_limit_mb)},
            "tests": tests,
            "generated_tests": generated,
            "language": language,
            "comparator": comparator,
        }


def _cases(suite_kind: str, tests: list[Any]) -> list[Any]:
    """Every test as a string, in every format: an stdio case ({"input", "output"})
    goes as its JSON text (`json.loads` it). One type per column is what lets a
    snapshot mixing stdio with other suites load with `datasets` (Arrow) as it is."""
    if suite_kind not in _OBJECT_CASES:
        return tests
    return [case if isinstance(case, str) else _encode(case) for case in tests]


def _cases_text(suite_kind: str, text: str) -> str:
    """`_cases` for a JSON column fetched as text: other suites' lists go as they are."""
    return text if suite_kind not in _OBJECT_CASES else _encode(_cases(suite_kind, json.loads(text)))


def _number(value: float | None) -> str:
    if value is None:
        return "null"
    return float.__repr__(value) if math.isfinite(value) else _encode(value)  # NaN as json.dumps writes it


def _text(value: str) -> str:
    return encode_basestring(value) if value else "null"  # blank: unknown (null), as in `records`


def record_lines(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[str]:
    """Each of `records` as the JSON text json.dumps(record, ensure_ascii=False) gives
    it, put together from the columns: the same keys in the same order, the same
    separators and escapes. The JSON columns are spliced in as PostgreSQL prints
    jsonb, which is how json.dumps writes the lists of strings (and the stdio
    cases' objects of strings) they hold; SQLite keeps the text Django wrote,
    the same values with non-ASCII characters escaped."""
    snapshot_text = encode_basestring(snapshot.hash)
    width = len(_COLUMNS)
    for row in member_rows(snapshot, with_hidden_tests=with_hidden_tests, json_as_text=True):
        (slug, content_hash, difficulty, difficulty_source, band, reward_noise, tags, number, statement, suite_kind,
         entry_point, starter_code, setup, visible, time_limit_s, memory_limit_mb, generated, language,
         comparator, signature) = row[:width]  # fmt: skip
        user = encode_basestring(
            _user_prompt(statement, suite_kind, entry_point, starter_code, language, comparator, signature)
        )
        hidden = f', "hidden": {_cases_text(suite_kind, row[width])}' if with_hidden_tests else ""
        visible = _cases_text(suite_kind, visible)
        yield (
            f'{{"task_id": {encode_basestring(slug)}, "version": {int(number)}, '
            f'"version_hash": {encode_basestring(content_hash)}, "snapshot": {snapshot_text}, '
            f'"prompt": [{_SYSTEM_MESSAGES.get(language) or _SYSTEM_MESSAGES["python"]}, '
            f'{{"role": "user", "content": {user}}}], '
            f'"suite_kind": {encode_basestring(suite_kind)}, "entry_point": {encode_basestring(entry_point)}, '
            f'"difficulty": {_number(difficulty)}, "difficulty_source": {_text(difficulty_source)}, '
            f'"band": {_text(band)}, "reward_noise": {_number(reward_noise)}, "tags": {tags}, '
            f'"limits": {{"time_limit_s": {_number(float(time_limit_s))}, "memory_limit_mb": {int(memory_limit_mb)}}}, '
            f'"tests": {{"setup": {encode_basestring(setup)}, "visible": {visible}{hidden}}}, '
            f'"generated_tests": {generated}, "language": {encode_basestring(language)}, '
            f'"comparator": {comparator}}}'
        )


def jsonl_chunks(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[bytes]:
    batch: list[str] = []
    for line in record_lines(snapshot, with_hidden_tests=with_hidden_tests):
        batch.append(line)
        if len(batch) >= CHUNK:
            batch.append("")  # the last line's newline
            yield "\n".join(batch).encode()
            batch = []
    if batch:
        batch.append("")
        yield "\n".join(batch).encode()


def json_chunks(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[bytes]:
    """One JSON array, written as it goes."""
    yield b"["
    first = True
    for line in record_lines(snapshot, with_hidden_tests=with_hidden_tests):
        yield (b"" if first else b",") + line.encode()  # one record a chunk: background builds count them so
        first = False
    yield b"]"


def gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()


def parquet_schema() -> pa.Schema:
    """The records' shape as Arrow types. Written out rather than inferred, so every
    file of every snapshot has the same columns and types: `hidden` is a nullable
    column, null without the export:tests scope, and nullable figures stay float64
    even in a chunk where all of them are null."""
    import pyarrow as pa

    text = pa.string()
    return pa.schema([
        pa.field("task_id", text, nullable=False),
        pa.field("version", pa.int64(), nullable=False),
        pa.field("version_hash", text, nullable=False),
        pa.field("snapshot", text, nullable=False),
        pa.field("prompt", pa.list_(pa.struct([pa.field("role", text, nullable=False),
                                               pa.field("content", text, nullable=False)])), nullable=False),
        pa.field("suite_kind", text, nullable=False),
        pa.field("entry_point", text, nullable=False),
        pa.field("difficulty", pa.float64()),
        pa.field("difficulty_source", text),
        pa.field("band", text),
        pa.field("reward_noise", pa.float64()),
        pa.field("tags", pa.list_(text), nullable=False),
        pa.field("limits", pa.struct([pa.field("time_limit_s", pa.float64(), nullable=False),
                                      pa.field("memory_limit_mb", pa.int64(), nullable=False)]), nullable=False),
        pa.field("tests", pa.struct([pa.field("setup", text, nullable=False),
                                     pa.field("visible", pa.list_(text), nullable=False),
                                     pa.field("hidden", pa.list_(text))]), nullable=False),
        pa.field("generated_tests", pa.list_(pa.struct([
            pa.field("hidden_index", pa.int64(), nullable=False), pa.field("generator", text, nullable=False),
            pa.field("seed", pa.int64(), nullable=False), pa.field("reason", text, nullable=False),
            pa.field("mutant", text, nullable=False), pa.field("from_version", text, nullable=False),
        ])), nullable=False),
        pa.field("language", text, nullable=False),
        pa.field("comparator", pa.struct([
            pa.field("mode", text), pa.field("abs_tol", pa.float64()), pa.field("rel_tol", pa.float64()),
            pa.field("language", text), pa.field("source", text),
        ]), nullable=False),
    ])  # fmt: skip


class _Drain:
    """A write-only file for ParquetWriter that keeps what it is given until `take`:
    the bytes of each finished row group leave the process before the next one is
    built. The writer keeps count of the position itself; it asks only `write`
    and `closed`."""

    closed = False

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


# Min/max statistics where they help a reader skip row groups (ids, figures, tags).
# The free text is left out: a statistic there is two whole statements or test
# files a row group, kept in the footer, which the writer holds until the end, so
# it would grow with the snapshot.
_STATISTICS = ["task_id", "version", "version_hash", "snapshot", "suite_kind", "entry_point", "difficulty",
               "difficulty_source", "band", "reward_noise", "tags.list.element", "limits.time_limit_s",
               "limits.memory_limit_mb"]  # fmt: skip
# Dictionary encoding for the columns of few distinct values; tried on the free
# text it only costs time before falling back to plain.
_DICTIONARY = ["snapshot", "suite_kind", "difficulty_source", "band", "prompt.list.element.role",
               "tags.list.element", "limits.time_limit_s", "limits.memory_limit_mb", "language",
               "comparator.mode", "comparator.language"]  # fmt: skip


def parquet_chunks(snapshot: Snapshot, *, with_hidden_tests: bool) -> Iterator[bytes]:
    """One Parquet file, one row group per CHUNK records, each sent once written.

    Compressed inside (zstd, per column chunk), so it is never gzipped again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema()
    sink = _Drain()
    writer = pq.ParquetWriter(
        sink, schema, compression="zstd", write_statistics=_STATISTICS, use_dictionary=_DICTIONARY
    )
    batch: list[dict[str, Any]] = []
    for record in records(snapshot, with_hidden_tests=with_hidden_tests):
        batch.append(record)
        if len(batch) >= CHUNK:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema), row_group_size=CHUNK)
            batch = []
            yield sink.take()
    if batch:
        writer.write_table(pa.Table.from_pylist(batch, schema=schema), row_group_size=CHUNK)
    # The footer (where each row group and column chunk lies) only at a complete end:
    # an export cut short by an error must not read as a whole, shorter file.
    writer.close()
    yield sink.take()


# -- the formats ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportFormat:
    name: str
    content_type: str
    chunks: Callable[..., Iterator[bytes]]
    # Records in one chunk of the uncompressed output, so a background build's progress
    # moves as it is written (the chunk functions above decide what a chunk holds).
    rows_in: Callable[[bytes], int]
    # Compressed inside the file (Parquet): gzip on top would cost CPU and gain nothing.
    self_compressed: bool = False


def _jsonl_rows(chunk: bytes) -> int:
    return chunk.count(b"\n")  # one record a line: json.dumps escapes newlines inside strings


def _json_rows(chunk: bytes) -> int:
    return 1 if chunk.lstrip(b"[,").startswith(b"{") else 0  # "[", one record a chunk after a comma, "]"


def _row_group_rows(chunk: bytes) -> int:
    return CHUNK  # one row group of CHUNK records a chunk (the last may hold fewer: builds cap at the total)


FORMATS = {
    "jsonl": ExportFormat("jsonl", "application/x-ndjson", jsonl_chunks, _jsonl_rows),
    "json": ExportFormat("json", "application/json", json_chunks, _json_rows),
    "parquet": ExportFormat("parquet", PARQUET_CONTENT_TYPE, parquet_chunks, _row_group_rows, self_compressed=True),
}
