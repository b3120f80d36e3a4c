"""From the bytes of an upload to one decoded JSON object per line.

Nothing here knows about tasks: it bounds sizes, undoes gzip, and turns each
non-blank line into either a JSON object or a message that names what is
wrong with it and where.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from dataclasses import dataclass
from typing import Any

from tasks_app.importers.records import json_type_name

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


class FileProblem(Exception):
    """The file as a whole cannot be read (too large, corrupt gzip, ...)."""


@dataclass(frozen=True)
class SourceLine:
    number: int  # 1-based, counting blank lines, in the decompressed text
    value: dict[str, Any] | None = None
    error: str | None = None


def read_json_lines(data: bytes, *, limit: int) -> list[SourceLine]:
    """Every non-blank line of `data`, parsed; raises FileProblem for the file as a whole."""
    text = file_bytes(data, limit=limit)
    if text.startswith(UTF8_BOM):
        text = text[len(UTF8_BOM) :]
    lines = []
    offset = 0
    for number, raw in enumerate(text.split(b"\n"), start=1):
        if raw.strip():
            lines.append(parse_line(number, raw, offset))
        offset += len(raw) + 1
    return lines


def file_bytes(data: bytes, *, limit: int) -> bytes:
    """The raw bytes, gunzipped when they start with the gzip magic number.

    The size is checked before decompressing, and decompression stops one byte
    past the limit, so a small gzip bomb cannot expand into memory either.
    """
    if len(data) > limit:
        raise FileProblem(f"The file is larger than the import limit of {limit} bytes (TASKS_MAX_IMPORT_FILE_BYTES).")
    if not data.startswith(GZIP_MAGIC):
        return bytes(data)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            text = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise FileProblem(f"The file starts like gzip but is not a readable gzip stream: {exc}.") from exc
    if len(text) > limit:
        raise FileProblem(
            f"Decompressed, the file is larger than the import limit of {limit} bytes (TASKS_MAX_IMPORT_FILE_BYTES)."
        )
    return text


class _RefusedJson(ValueError):
    pass


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads would silently keep the last of two equal keys; a file that says
    # two things about one field is ambiguous, so it is refused.
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _RefusedJson(f"Duplicate key {key!r} in one object.")
        obj[key] = value
    return obj


def _refuse_constant(name: str) -> Any:
    raise _RefusedJson(f"{name} is not valid JSON.")


def _finite_float(text: str) -> float:
    # "1e999" is valid JSON but becomes infinity, which no hash or limit can hold.
    value = float(text)
    if not math.isfinite(value):
        raise _RefusedJson(f"The number {text} is too large.")
    return value


def parse_line(number: int, raw: bytes, offset: int) -> SourceLine:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SourceLine(
            number,
            error=(
                f"Not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line "
                f"(offset {offset + exc.start} in the file): {exc.reason}."
            ),
        )
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object_without_duplicate_keys,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        return SourceLine(number, error=f"Malformed JSON at column {exc.colno}: {exc.msg}.")
    except _RefusedJson as exc:
        return SourceLine(number, error=f"Malformed JSON: {exc}")
    except RecursionError:
        return SourceLine(number, error="Malformed JSON: nested too deeply.")
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        return SourceLine(number, error=f"Malformed JSON: {exc}.")
    if not isinstance(value, dict):
        return SourceLine(number, error=f"Expected a JSON object on each line, got {json_type_name(value)}.")
    return SourceLine(number, value=value)
