"""The importers under malformed files: random bytes, truncated JSON lines, wrong types,
missing and unknown fields, strings at and past the size limits, any Unicode, gzip
that is not. Whatever the file, `tasks_import` answers with its report (it never
raises), a refused file names each bad line (and the field, for a field's problem),
and nothing of a refused file is left in the database. The `import_tasks` command
answers a refused file with a CommandError and writes nothing either."""

from __future__ import annotations

import copy
import gzip
import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from hypothesis import event, example, given
from hypothesis import strategies as st

from tasks_app.importers import ImportReport, tasks_import
from tasks_app.importers.native import FORMAT_ID
from tasks_app.models import Solution, Tag, Task, TaskVersion, Transition
from tests.factories import content_data
from tests.fuzz.conftest import fuzz_settings

pytestmark = pytest.mark.django_db

LIMIT_BYTES = 3000  # statement and code limits while fuzzing: "huge" strings reach past them quickly


@pytest.fixture
def small_limits(settings: Any) -> None:
    settings.TASKS_MAX_STATEMENT_BYTES = LIMIT_BYTES
    settings.TASKS_MAX_CODE_BYTES = LIMIT_BYTES
    settings.TASKS_MAX_IMPORT_FILE_BYTES = 200_000


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Task, TaskVersion, Solution, Transition, Tag)}


# -- valid objects of each format, and ways to break them --------------------------------------


def _humaneval(n: int) -> dict[str, Any]:
    return {
        "task_id": f"HumanEval/{n}",
        "prompt": 'def add(a, b):\n    """Add a and b."""\n',
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "entry_point": "add",
    }


def _mbpp(n: int) -> dict[str, Any]:
    return {
        "task_id": n,
        "text": "Write a function to add two numbers.",
        "code": "def add(a, b):\n    return a + b",
        "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"],
    }


def _native(n: int) -> dict[str, Any]:
    return {"format": FORMAT_ID, "slug": f"fuzz-{n}", "title": f"Fuzz {n}", "tags": ["fuzz"], "version": content_data()}


MAKERS = {"humaneval": _humaneval, "mbpp": _mbpp, "native": _native}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def _mutated(draw: Any, obj: dict[str, Any]) -> dict[str, Any]:
    """The object with one to three changes, each of which may or may not make it invalid."""
    obj = copy.deepcopy(obj)
    for _ in range(draw(st.integers(1, 3))):
        target = obj
        if "version" in obj and isinstance(obj["version"], dict) and draw(st.booleans()):
            target = obj["version"]  # native: break the content inside, too
        keys = sorted(target)
        how = draw(st.sampled_from(["drop", "retype", "unicode", "huge", "unknown", "empty"]))
        if how == "unknown":
            target[draw(any_text)] = draw(json_values)
            continue
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        if how == "drop":
            del target[key]
        elif how == "retype":
            target[key] = draw(json_values)
        elif how == "unicode":
            target[key] = draw(any_text)
        elif how == "huge":
            size = draw(st.sampled_from([LIMIT_BYTES - 1, LIMIT_BYTES, LIMIT_BYTES + 1, 4 * LIMIT_BYTES]))
            target[key] = draw(st.sampled_from(["x", "é", "\U0001f600", "\n"])) * size
        else:
            target[key] = draw(st.sampled_from(["", [], {}, None, 0]))
    return obj


@st.composite
def _line(draw: Any, fmt: str, n: int) -> tuple[bytes, bool]:
    """One line of the file and whether it is surely bad (malformed, whatever the format)."""
    kind = draw(st.sampled_from(["valid", "mutated", "mutated", "truncated", "bytes", "not-object", "duplicate-key"]))
    obj = MAKERS[fmt](n)
    ascii_only = draw(st.booleans())
    if kind == "valid":
        return json.dumps(obj, ensure_ascii=ascii_only).encode(), False
    if kind == "mutated":
        return json.dumps(draw(_mutated(obj)), ensure_ascii=ascii_only).encode(), False
    if kind == "truncated":
        text = json.dumps(obj, ensure_ascii=ascii_only).encode()
        return text[: draw(st.integers(1, len(text) - 1))], True
    if kind == "bytes":
        raw = draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b"")
        if not raw.strip() or raw.strip().startswith(b"{"):
            raw = b"\xff" + raw  # never blank, never an accidental object
        return raw, True
    if kind == "not-object":
        value = draw(st.one_of(st.lists(json_values, max_size=3), st.integers(), st.text(max_size=10), st.none()))
        return json.dumps(value).encode(), True
    return b'{"task_id": 1, "task_id": 2}', True


@st.composite
def _file(draw: Any) -> tuple[bytes, str, set[int], int]:
    """(the file's bytes, its format, the numbers of its surely bad lines, its line count)."""
    fmt = draw(st.sampled_from(sorted(MAKERS)))
    count = draw(st.integers(1, 5))
    lines: list[bytes] = []
    bad: set[int] = set()
    for n in range(count):
        if draw(st.booleans()) and n:
            lines.append(draw(st.sampled_from([b"", b"   ", b"\t"])))  # blank lines count, but hold no task
        raw, is_bad = draw(_line(fmt, n))
        lines.append(raw)
        if is_bad:
            bad.add(len(lines))
    if not bad:  # at least one line the import must refuse
        position = draw(st.integers(0, len(lines)))
        lines.insert(position, draw(st.sampled_from([b'{"task_id": "x"', b"not json", b"[1, 2]", b"\xc3\x28"])))
        bad = {b + 1 if b > position else b for b in bad} | {position + 1}
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = ending.join(lines) + draw(st.sampled_from([b"", ending]))
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 3)) == 0:
        data = gzip.compress(data)
    return data, fmt, bad, len(lines)


def _assert_refused_cleanly(report: ImportReport, before: dict[str, int], line_count: int) -> None:
    assert isinstance(report, ImportReport)
    assert not report.ok, report.to_dict()
    assert _counts() == before, "a refused import left rows behind"
    assert report.created == report.updated == report.unchanged == 0 and report.items == []
    assert report.rejected >= 1
    for error in report.errors:
        assert isinstance(error["line"], int) and 0 <= error["line"] <= line_count, error
        assert isinstance(error["message"], str) and error["message"].strip(), error
        details = error["details"]
        if error["line"] and isinstance(details, dict) and details and "keys" not in details:
            # A field's problem names the field (by the source file's own name for it).
            assert any(error["message"].startswith(f"{field}:") for field in details) or error["message"].startswith(
                "Duplicate slug"
            ), error


# -- the properties ------------------------------------------------------------------------------


@fuzz_settings(max_examples=40)
@given(data=st.binary(max_size=400))
@example(data=b"")
@example(data=b"\x1f\x8b\x08\x00garbage")  # starts like gzip, is not
@example(data=b"\n\n  \n")
@example(data=b"\xef\xbb\xbf")
@example(data=b"1e999")
@example(data=b'{"canonical_solution": 1}')
def test_random_bytes_give_a_report_never_an_exception_and_write_nothing(
    data: bytes, curator: Any, small_limits: None
) -> None:
    before = _counts()
    report = tasks_import(actor=curator, data=data)
    _assert_refused_cleanly(report, before, line_count=data.count(b"\n") + 1)


@fuzz_settings(max_examples=60)
@given(case=_file(), name_the_format=st.booleans())
def test_a_file_with_any_bad_line_is_refused_whole_naming_each_bad_line(
    case: tuple[bytes, str, set[int], int], name_the_format: bool, curator: Any, small_limits: None
) -> None:
    data, fmt, bad_lines, line_count = case
    before = _counts()
    report = tasks_import(actor=curator, data=data, fmt=fmt if name_the_format else None)
    _assert_refused_cleanly(report, before, line_count)
    reported = {error["line"] for error in report.errors}
    if name_the_format and 0 not in reported:
        # With the format named, every line is checked: each bad one is reported, not only the first.
        assert bad_lines <= reported, (bad_lines, report.errors)


@fuzz_settings(max_examples=30)
@given(fmt=st.sampled_from(sorted(MAKERS)), data=st.data())
def test_a_file_of_mutated_objects_is_imported_whole_or_refused_whole(
    fmt: str, data: Any, curator: Any, small_limits: None
) -> None:
    objects = [data.draw(_mutated(MAKERS[fmt](n)), label=f"line {n + 1}") for n in range(data.draw(st.integers(1, 3)))]
    raw = b"\n".join(json.dumps(obj).encode() for obj in objects)
    before = _counts()
    report = tasks_import(actor=curator, data=raw, fmt=fmt)
    event("imported" if report.ok else "refused")
    if report.ok:
        assert len(report.items) == len(objects)
        assert _counts()["Task"] == before["Task"] + report.created
    else:
        _assert_refused_cleanly(report, before, line_count=len(objects))


def test_a_refused_line_after_good_ones_leaves_none_of_them_written(curator: Any) -> None:
    lines = [json.dumps(_mbpp(1)), json.dumps(_mbpp(2)), json.dumps({**_mbpp(3), "test_list": "assert add(1, 2) == 3"})]
    before = _counts()
    report = tasks_import(actor=curator, data="\n".join(lines).encode())
    expected = "test_list: Expected a list of assertions, got a string."
    assert [(e["line"], e["message"]) for e in report.errors] == [(3, expected)]
    assert _counts() == before


@fuzz_settings(max_examples=12)
@given(case=_file())
def test_the_import_command_refuses_a_bad_file_with_a_command_error_and_writes_nothing(
    case: tuple[bytes, str, set[int], int], curator: Any, small_limits: None
) -> None:
    data, _, _, _ = case
    before = _counts()
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_tasks", "-", "--user", curator.username, stdin=io.BytesIO(data), stdout=out, stderr=err)
    assert _counts() == before
    assert "line " in err.getvalue() or "file: " in err.getvalue()
