"""The importers: HumanEval, MBPP and the native format, all-or-nothing, idempotent by hash."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc

import pytest

from tasks_app.content import VersionContent
from tasks_app.importers import ImportReport, tasks_export, tasks_import
from tasks_app.models import State, Task, TaskVersion
from tasks_app.services import task_retire, task_version_create
from tests.factories import UserFactory, content_data, make_task
from tests.tasks_app.conftest import jsonl

DEMO_HUMANEVAL = {
    "task_id": "Demo/7",
    "prompt": 'def add_all(xs):\n    """Return the sum of `xs`."""\n',
    "canonical_solution": "    return sum(xs)\n",
    "test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n",
    "entry_point": "add_all",
}

# Invented MBPP-style tasks (not from the MBPP data set).
MBPP_ROWS = [
    {
        "task_id": 901,
        "text": "Write a function to return the largest of three numbers. Negative numbers count too.",
        "code": "def largest_of_three(a, b, c):\r\n    return max(a, b, c) + OFFSET\r\n",
        "test_list": ["assert largest_of_three(1, 2, 3) == 3", "assert largest_of_three(-1, -5, -2) == -1"],
        "test_setup_code": "OFFSET = 0\r\n",
        "challenge_test_list": [],
    },
    {
        "task_id": 902,
        "text": "Write a python function to reverse the order of the words in a sentence",
        "code": "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
        "test_list": ["assert len(reverse_words('one two')) == 7", "assert reverse_words('a b') == 'b a'"],
        "test_setup_code": "",
        "challenge_test_list": ["assert reverse_words('x y z') == 'z y x'"],
    },
    {
        "task_id": 903,
        "text": "Write a function to count the vowels in a string.",
        "code": "def count_vowels(s):\n    return sum(ch in 'aeiou' for ch in s.lower())\n",
        "test_list": ["assert count_vowels('Banana') == 3"],
    },
]


def run_import(actor, data: bytes, **kwargs) -> ImportReport:
    return tasks_import(actor=actor, data=data, **kwargs)


def native_row(**overrides):
    content = VersionContent.parse(content_data())
    row = {
        "format": "taskplatform.task/v1",
        "slug": "add-two",
        "title": "Add two numbers",
        "tags": ["arithmetic"],
        "version": content.canonical(),
        "content_hash": content.content_hash(),
    }
    row.update(overrides)
    return row


def only_error(report: ImportReport) -> dict:
    assert len(report.errors) == 1, report.errors
    return report.errors[0]


def assert_rejected_without_writes(report: ImportReport, before: tuple[int, int], after: tuple[int, int]) -> None:
    assert report.errors
    assert (report.created, report.updated, report.unchanged, report.items) == (0, 0, 0, [])
    assert report.rejected == len({e["line"] for e in report.errors})
    assert after == before


# -- HumanEval: the real data set -------------------------------------------------------------------


def test_importing_humaneval_creates_all_164_tasks_with_their_fields(curator, humaneval_gz, humaneval_rows):
    started = time.perf_counter()
    report = run_import(curator, humaneval_gz, filename="HumanEval.jsonl.gz")
    elapsed = time.perf_counter() - started
    print(f"imported 164 HumanEval tasks in {elapsed:.2f}s")

    assert report.errors == []
    assert (report.format, report.created, report.updated, report.unchanged, report.rejected) == (
        "humaneval",
        164,
        0,
        0,
        0,
    )
    assert Task.objects.count() == 164 and TaskVersion.objects.count() == 164
    task = Task.objects.get(slug="humaneval-0")
    version = task.latest_version
    assert task.title == "Has close elements"
    assert [t.name for t in task.tags.all()] == ["humaneval"]
    assert task.state == State.DRAFT
    assert (version.entry_point, version.suite_kind) == ("has_close_elements", "check_function")
    assert version.visible_tests == []
    source = humaneval_rows[0]
    assert version.starter_code == source["prompt"]
    assert version.hidden_tests == [source["test"]]
    assert "```python\n" + source["prompt"].rstrip() + "\n```" in version.statement
    (reference,) = version.solutions.all()
    assert (reference.role, reference.label) == ("reference", "canonical")
    assert reference.code == source["prompt"] + source["canonical_solution"]
    assert "def has_close_elements(" in reference.code
    assert reference.note == "Canonical solution from the source data set."
    assert version.changelog == "Imported from HumanEval.jsonl.gz"
    assert (version.time_limit_s, version.memory_limit_mb) == (10.0, 256)
    item = report.items[0]
    assert item == {
        "line": 1,
        "slug": "humaneval-0",
        "outcome": "created",
        "version": 1,
        "content_hash": version.content_hash,
    }


def test_importing_humaneval_twice_creates_nothing_the_second_time(curator, humaneval_gz):
    run_import(curator, humaneval_gz)
    hashes = dict(TaskVersion.objects.values_list("task__slug", "content_hash"))

    again = run_import(curator, humaneval_gz)

    assert (again.created, again.updated, again.unchanged, again.rejected) == (0, 0, 164, 0)
    assert {i["outcome"] for i in again.items} == {"unchanged"}
    assert TaskVersion.objects.count() == 164
    assert dict(TaskVersion.objects.values_list("task__slug", "content_hash")) == hashes


def test_gzip_is_recognised_by_its_magic_bytes_whatever_the_file_is_called(curator):
    compressed = gzip.compress(jsonl(DEMO_HUMANEVAL))
    report = run_import(curator, compressed, filename="tasks.jsonl")
    assert report.created == 1

    plain_named_gz = run_import(curator, jsonl(DEMO_HUMANEVAL), filename="tasks.jsonl.gz")
    assert (plain_named_gz.errors, plain_named_gz.unchanged) == ([], 1)


def test_a_humaneval_task_id_becomes_a_slug_and_the_entry_point_a_title(curator):
    report = run_import(curator, jsonl(DEMO_HUMANEVAL))
    task = Task.objects.get()
    assert (task.slug, task.title) == ("demo-7", "Add all")
    assert report.items[0]["slug"] == "demo-7"
    assert task.latest_version.statement.startswith("Complete the function `add_all`")


def test_a_prompt_with_backticks_gets_a_longer_fence_in_the_statement(curator):
    row = dict(DEMO_HUMANEVAL, prompt='def add_all(xs):\n    """```\n    Sum.\n    ```"""\n')
    run_import(curator, jsonl(row))
    statement = Task.objects.get().latest_version.statement
    assert "````python\n" in statement and statement.endswith("\n````\n")


def test_a_humaneval_line_with_an_unknown_field_is_rejected(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL, dict(DEMO_HUMANEVAL, task_id="Demo/8", difficulty="easy")))
    error = only_error(report)
    assert (error["line"], error["task"]) == (2, "demo-8")
    assert "Unknown field" in error["details"]["difficulty"][0]
    assert_rejected_without_writes(report, before, row_counts())


def test_humaneval_problems_are_reported_under_the_source_field_names(curator, row_counts):
    before = row_counts()
    row = dict(DEMO_HUMANEVAL, canonical_solution="    return sum(xs\n", test="def not_check(c):\n    pass\n")
    report = run_import(curator, jsonl(row))
    error = only_error(report)
    assert set(error["details"]) == {"canonical_solution", "test"}
    assert "syntax error" in error["details"]["canonical_solution"][0]
    assert "check(candidate)" in error["details"]["test"][0]
    assert_rejected_without_writes(report, before, row_counts())


# -- MBPP -----------------------------------------------------------------------------------------------


def test_importing_mbpp_maps_tests_setup_and_entry_points(curator):
    report = run_import(curator, jsonl(*MBPP_ROWS), filename="mbpp-sample.jsonl")

    assert report.errors == []
    assert (report.format, report.created) == ("mbpp", 3)
    first = Task.objects.get(slug="mbpp-901")
    version = first.latest_version
    assert first.title == "Write a function to return the largest of three numbers"
    assert [t.name for t in first.tags.all()] == ["mbpp"]
    assert (version.suite_kind, version.entry_point, version.statement) == (
        "assertions",
        "largest_of_three",
        MBPP_ROWS[0]["text"],
    )
    assert version.visible_tests == version.hidden_tests == MBPP_ROWS[0]["test_list"]
    assert version.test_setup == "OFFSET = 0\n"


def test_mbpp_code_with_crlf_line_endings_is_stored_with_lf(curator):
    run_import(curator, jsonl(MBPP_ROWS[0]))
    code = Task.objects.get().latest_version.solutions.get().code
    assert "\r" not in code
    assert code == "def largest_of_three(a, b, c):\n    return max(a, b, c) + OFFSET\n"


def test_mbpp_challenge_tests_become_the_hidden_tests(curator):
    run_import(curator, jsonl(MBPP_ROWS[1]))
    version = Task.objects.get(slug="mbpp-902").latest_version
    assert version.visible_tests == MBPP_ROWS[1]["test_list"]
    assert version.hidden_tests == MBPP_ROWS[1]["challenge_test_list"]


def test_the_mbpp_entry_point_skips_builtins_called_before_the_function(curator):
    # `len(reverse_words(...))`: len is called first, reverse_words is the function under test.
    run_import(curator, jsonl(MBPP_ROWS[1]))
    assert Task.objects.get().latest_version.entry_point == "reverse_words"


def test_an_mbpp_line_without_optional_fields_is_accepted(curator):
    report = run_import(curator, jsonl(MBPP_ROWS[2]))
    version = Task.objects.get(slug="mbpp-903").latest_version
    assert report.created == 1
    assert (version.test_setup, version.hidden_tests) == ("", MBPP_ROWS[2]["test_list"])


def test_a_long_mbpp_text_gives_a_title_of_at_most_80_characters(curator):
    text = "Write a function that " + "takes a very long list of arguments and " * 5 + "returns nothing useful."
    run_import(curator, jsonl(dict(MBPP_ROWS[2], text=text)))
    title = Task.objects.get().title
    assert len(title) <= 80 and title.endswith("…") and title.startswith("Write a function that takes")


def test_an_mbpp_test_that_calls_no_function_is_rejected(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(MBPP_ROWS[2], dict(MBPP_ROWS[1], test_list=["assert 1 + 1 == 2"])))
    error = only_error(report)
    assert (error["line"], error["task"]) == (2, "mbpp-902")
    assert "test_list[0]" in error["details"]
    assert_rejected_without_writes(report, before, row_counts())


def test_an_mbpp_line_with_an_unknown_field_or_wrong_types_is_rejected(curator, row_counts):
    before = row_counts()
    report = run_import(
        curator, jsonl(dict(MBPP_ROWS[2], source="web"), dict(MBPP_ROWS[1], test_list="assert x", code=42))
    )
    first, second = report.errors
    assert (first["line"], list(first["details"])) == (1, ["source"])
    assert second["line"] == 2
    assert second["details"]["code"] == ["Expected a string, got a number."]
    assert second["details"]["test_list"] == ["Expected a list of assertions, got a string."]
    assert_rejected_without_writes(report, before, row_counts())


def test_an_mbpp_test_that_is_not_one_assertion_is_reported_as_the_source_test(curator, row_counts):
    before = row_counts()
    tests = ["assert count_vowels('a') == 1", "print(count_vowels('a'))"]
    report = run_import(curator, jsonl(dict(MBPP_ROWS[2], test_list=tests)))
    error = only_error(report)
    assert error["details"] == {"test_list[1]": ["Each test must be exactly one `assert` statement."]}
    assert_rejected_without_writes(report, before, row_counts())


# -- The native format ------------------------------------------------------------------------------------


def test_export_then_import_into_an_empty_database_then_export_gives_the_same_bytes(curator):
    make_task(owner=curator, slug="zeta", title="Zêta — ünïcode ✓", tags=("b-tag", "a-tag"))
    make_task(owner=curator, slug="alpha", title="Alpha", tags=(), statement="Add `a` and `b`: ∑ ≠ ∏, 中文.")
    task_version_create(
        actor=curator,
        task=Task.objects.get(slug="alpha"),
        content=VersionContent.parse(content_data(statement="Second version.", time_limit_s=2.5)),
    )
    first = "".join(tasks_export())
    Task.objects.all().delete()

    report = run_import(curator, first.encode())
    second = "".join(tasks_export())

    assert (report.format, report.created) == ("native", 2)
    assert second == first
    assert [json.loads(line)["slug"] for line in first.splitlines()] == ["alpha", "zeta"]


def test_export_writes_one_sorted_compact_object_per_line_for_the_newest_version(curator):
    task = make_task(owner=curator, tags=("z", "arithmetic"))
    lines = list(tasks_export())
    assert len(lines) == 1 and lines[0].endswith("\n") and lines[0].count("\n") == 1
    obj = json.loads(lines[0])
    assert lines[0] == json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    assert obj["tags"] == ["arithmetic", "z"]
    assert obj["content_hash"] == task.latest_version.content_hash
    assert obj["version"] == VersionContent.from_version(task.latest_version).canonical()
    assert VersionContent.parse(obj["version"]).content_hash() == obj["content_hash"]


def test_export_can_be_limited_to_a_queryset(curator):
    make_task(owner=curator, slug="one")
    make_task(owner=curator, slug="two")
    lines = list(tasks_export(queryset=Task.objects.filter(slug="two")))
    assert [json.loads(line)["slug"] for line in lines] == ["two"]


def test_a_native_line_whose_hash_does_not_match_its_content_is_rejected(curator, row_counts):
    before = row_counts()
    good = native_row()
    tampered = native_row(slug="tampered", content_hash=good["content_hash"])
    tampered["version"] = dict(good["version"], statement="Something else.")
    report = run_import(curator, jsonl(good, tampered))
    error = only_error(report)
    actual = VersionContent.parse(tampered["version"]).content_hash()
    assert (error["line"], error["task"]) == (2, "tampered")
    assert error["details"]["content_hash"] == [
        f"content_hash mismatch: file says {good['content_hash']}, content hashes to {actual}."
    ]
    assert error["message"].startswith("content_hash: content_hash mismatch")
    assert_rejected_without_writes(report, before, row_counts())


def test_a_native_line_without_a_content_hash_is_accepted(curator):
    row = native_row()
    del row["content_hash"]
    assert run_import(curator, jsonl(row)).created == 1


def test_a_native_line_of_another_format_version_is_rejected(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(native_row(format="taskplatform.task/v9")))
    assert "format" in only_error(report)["details"]
    assert_rejected_without_writes(report, before, row_counts())


def test_native_content_problems_are_reported_under_version(curator, row_counts):
    before = row_counts()
    row = native_row(content_hash=None)
    row["version"] = dict(row["version"], suite_kind="fuzzing", extra=1)
    report = run_import(curator, jsonl(row))
    assert {"version.suite_kind", "version.extra"} <= set(only_error(report)["details"])
    assert_rejected_without_writes(report, before, row_counts())


def test_changed_content_for_an_existing_task_adds_a_version(curator):
    task = make_task(owner=curator)
    changed = VersionContent.parse(content_data(statement="Add the two numbers."))
    row = native_row(version=changed.canonical(), content_hash=changed.content_hash())

    report = run_import(curator, jsonl(row), filename="/some/where/update.jsonl")

    assert (report.created, report.updated, report.unchanged) == (0, 1, 0)
    assert report.items[0]["outcome"] == "updated" and report.items[0]["version"] == 2
    task.refresh_from_db()
    assert task.latest_version.number == 2
    assert task.latest_version.content_hash == changed.content_hash()
    assert task.latest_version.changelog == "Imported from update.jsonl"


def test_a_reimport_adds_missing_tags_but_keeps_the_curators_title_and_tags(curator):
    task = make_task(owner=curator)  # title "Add two numbers", tag "arithmetic"
    report = run_import(curator, jsonl(native_row(title="Add two integers", tags=["maths", "easy"])))
    assert (report.created, report.updated, report.unchanged) == (0, 0, 1)
    task.refresh_from_db()
    assert task.title == "Add two numbers"
    assert sorted(t.name for t in task.tags.all()) == ["arithmetic", "easy", "maths"]
    assert task.versions.count() == 1


def test_a_dry_run_writes_nothing_but_counts_what_a_real_run_would_do(curator):
    make_task(owner=curator, slug="same")
    make_task(owner=curator, slug="edited")
    edited = VersionContent.parse(content_data(statement="Edited."))
    rows = [
        native_row(slug="same"),
        native_row(slug="edited", version=edited.canonical(), content_hash=edited.content_hash()),
        native_row(slug="brand-new"),
    ]
    before = (Task.objects.count(), TaskVersion.objects.count())

    dry = run_import(curator, jsonl(*rows), dry_run=True)

    assert (Task.objects.count(), TaskVersion.objects.count()) == before
    assert dry.dry_run is True
    assert (dry.created, dry.updated, dry.unchanged, dry.rejected) == (1, 1, 1, 0)
    assert [(i["slug"], i["outcome"], i["version"]) for i in dry.items] == [
        ("same", "unchanged", 1),
        ("edited", "updated", 2),
        ("brand-new", "created", 1),
    ]
    real = run_import(curator, jsonl(*rows))
    assert [{**i} for i in real.items] == dry.items


def test_a_retired_task_with_new_content_rolls_back_the_whole_import(curator, row_counts):
    retired = make_task(owner=curator, slug="old")
    task_retire(actor=curator, task=retired, note="Obsolete.")
    edited = VersionContent.parse(content_data(statement="Edited."))
    rows = [
        native_row(slug="fresh"),
        native_row(slug="old", version=edited.canonical(), content_hash=edited.content_hash()),
    ]
    before = row_counts()

    report = run_import(curator, jsonl(*rows))

    error = only_error(report)
    assert (error["line"], error["task"]) == (2, "old")
    assert "retired" in error["message"]
    assert not Task.objects.filter(slug="fresh").exists()
    assert_rejected_without_writes(report, before, row_counts())


def test_an_actor_who_is_not_a_curator_imports_nothing(db, row_counts):
    outsider = UserFactory(username="olga", roles=["reviewer"])
    before = row_counts()
    report = run_import(outsider, jsonl(native_row(slug="a"), native_row(slug="b")))
    error = only_error(report)
    assert (error["line"], error["task"]) == (1, "a")
    assert "curator" in error["message"].lower()
    assert_rejected_without_writes(report, before, row_counts())


# -- Format detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "expected"),
    [(DEMO_HUMANEVAL, "humaneval"), (MBPP_ROWS[2], "mbpp"), (native_row(), "native")],
    ids=["humaneval", "mbpp", "native"],
)
def test_the_format_is_detected_from_the_keys_of_the_first_line(curator, row, expected):
    report = run_import(curator, b"\n" + jsonl(row))
    assert (report.errors, report.format, report.created) == ([], expected, 1)
    assert report.items[0]["line"] == 2


def test_a_file_whose_format_cannot_be_detected_is_rejected(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl({"question": "What?", "answer": 42}, DEMO_HUMANEVAL))
    error = only_error(report)
    assert error["line"] == 1 and "Cannot detect the format" in error["message"]
    assert_rejected_without_writes(report, before, row_counts())


def test_a_first_line_that_is_not_json_makes_the_format_undetectable(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl("{oops", DEMO_HUMANEVAL, "[1]"))
    assert [(e["line"], e["message"].split(":")[0]) for e in report.errors] == [
        (0, "Cannot detect the format"),
        (1, "Malformed JSON at column 2"),
        (3, "Expected a JSON object on each line, got a list."),
    ]
    assert_rejected_without_writes(report, before, row_counts())


def test_an_unknown_explicit_format_is_a_clear_error(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL), fmt="apps")
    error = only_error(report)
    assert error["line"] == 0
    assert error["message"] == "Unknown format 'apps'. One of: native, humaneval, mbpp, codecontests, multilang."
    assert_rejected_without_writes(report, before, row_counts())


def test_an_explicit_format_that_does_not_fit_the_file_rejects_every_line(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL, dict(DEMO_HUMANEVAL, task_id="Demo/8")), fmt="mbpp")
    assert [e["line"] for e in report.errors] == [1, 2]
    assert report.rejected == 2
    assert_rejected_without_writes(report, before, row_counts())


# -- Bad input: always a line-numbered error, never a traceback, never a partial import --------------------


def test_every_bad_line_is_reported_not_only_the_first(curator, row_counts):
    before = row_counts()
    data = jsonl(
        DEMO_HUMANEVAL,
        dict(DEMO_HUMANEVAL, task_id="Demo/2", entry_point="class"),
        dict(DEMO_HUMANEVAL, task_id="Demo/3"),
        "not json",
        dict(DEMO_HUMANEVAL, task_id="Demo/5", prompt=5),
    )
    report = run_import(curator, data)
    assert [(e["line"], e["task"]) for e in report.errors] == [(2, "demo-2"), (4, None), (5, "demo-5")]
    assert report.errors[2]["details"] == {"prompt": ["Expected a string, got a number."]}
    assert report.rejected == 3
    assert_rejected_without_writes(report, before, row_counts())


def test_a_duplicate_slug_is_an_error_on_the_later_line(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL, dict(DEMO_HUMANEVAL, task_id="DEMO-7")))
    error = only_error(report)
    assert (error["line"], error["task"]) == (2, "demo-7")
    assert error["message"] == "Duplicate slug 'demo-7': line 1 already has it."
    assert_rejected_without_writes(report, before, row_counts())


def test_invalid_utf8_names_the_line_and_the_byte(curator, row_counts):
    before = row_counts()
    good = json.dumps(DEMO_HUMANEVAL).encode()
    bad = b'{"task_id": "Demo/\xff"}'
    report = run_import(curator, good + b"\n" + bad + b"\n")
    error = only_error(report)
    assert error["line"] == 2
    assert "Not valid UTF-8: byte 0xff at byte 19 of the line" in error["message"]
    assert f"offset {len(good) + 1 + 18} in the file" in error["message"]
    assert_rejected_without_writes(report, before, row_counts())


def test_malformed_json_reports_the_json_error_and_column(curator, row_counts):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL, "", '{"task_id": "x",, }'))
    error = only_error(report)
    assert error["line"] == 3
    assert error["message"] == "Malformed JSON at column 17: Expecting property name enclosed in double quotes."
    assert_rejected_without_writes(report, before, row_counts())


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('["a", "list"]', "Expected a JSON object on each line, got a list."),
        ('"a string"', "Expected a JSON object on each line, got a string."),
        ('{"task_id": NaN}', "Malformed JSON: NaN is not valid JSON."),
        ('{"task_id": "a", "task_id": "b"}', "Malformed JSON: Duplicate key 'task_id' in one object."),
        ("[" * 100_000, "Malformed JSON: nested too deeply."),
        ('{"task_id": 1e999}', "Malformed JSON: The number 1e999 is too large."),
        ('{"task_id": ' + "9" * 5000 + "}", "Malformed JSON: Exceeds the limit (4300 digits)"),
    ],
    ids=["list", "string", "nan", "duplicate-key", "deep-nesting", "infinite-float", "huge-int"],
)
def test_a_line_that_is_not_a_plain_json_object_is_rejected(curator, row_counts, line, message):
    before = row_counts()
    report = run_import(curator, jsonl(DEMO_HUMANEVAL, line), fmt="humaneval")
    error = only_error(report)
    assert error["line"] == 2
    assert error["message"].startswith(message)
    assert_rejected_without_writes(report, before, row_counts())


def test_an_oversized_field_is_rejected_with_its_size(curator, row_counts, settings):
    settings.TASKS_MAX_CODE_BYTES = 1000
    before = row_counts()
    big = dict(DEMO_HUMANEVAL, canonical_solution="    return sum(xs)\n" + "    # padding\n" * 100)
    report = run_import(curator, jsonl(big))
    error = only_error(report)
    assert error["line"] == 1
    assert error["details"]["canonical_solution"][0].startswith("Too long: ")
    assert "the limit is 1000 bytes" in error["details"]["canonical_solution"][0]
    assert_rejected_without_writes(report, before, row_counts())


def test_an_oversized_statement_is_rejected(curator, row_counts, settings):
    settings.TASKS_MAX_STATEMENT_BYTES = 500
    before = row_counts()
    report = run_import(curator, jsonl(dict(MBPP_ROWS[2], text="Count the vowels. " * 50)))
    error = only_error(report)
    assert "the limit is 500 bytes" in error["details"]["text"][0]
    assert_rejected_without_writes(report, before, row_counts())


def test_a_file_over_the_size_limit_is_rejected_before_reading_it(curator, row_counts, settings):
    data = jsonl(DEMO_HUMANEVAL)
    settings.TASKS_MAX_IMPORT_FILE_BYTES = len(data) - 1
    before = row_counts()
    report = run_import(curator, data)
    error = only_error(report)
    assert error["line"] == 0
    assert error["message"] == (
        f"The file is larger than the import limit of {len(data) - 1} bytes (TASKS_MAX_IMPORT_FILE_BYTES)."
    )
    assert report.rejected == 1
    assert_rejected_without_writes(report, before, row_counts())


def test_a_gzip_bomb_is_stopped_at_the_size_limit(curator, row_counts, settings):
    settings.TASKS_MAX_IMPORT_FILE_BYTES = 100_000
    bomb = gzip.compress(b" " * 50_000_000, compresslevel=9)
    assert len(bomb) < 100_000
    before = row_counts()
    tracemalloc.start()
    try:
        report = run_import(curator, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Expanding the whole bomb would take 50 MB; stopping at the limit takes a fraction.
    assert peak < 5_000_000
    error = only_error(report)
    assert error["line"] == 0
    assert error["message"].startswith("Decompressed, the file is larger than the import limit of 100000 bytes")
    assert_rejected_without_writes(report, before, row_counts())


@pytest.mark.parametrize(
    "data",
    [gzip.compress(jsonl(DEMO_HUMANEVAL))[:-12], b"\x1f\x8b" + b"not really gzip at all"],
    ids=["truncated", "garbage-after-magic"],
)
def test_a_corrupt_gzip_stream_is_rejected(curator, row_counts, data):
    before = row_counts()
    report = run_import(curator, data)
    error = only_error(report)
    assert error["line"] == 0
    assert error["message"].startswith("The file starts like gzip but is not a readable gzip stream")
    assert_rejected_without_writes(report, before, row_counts())


def test_a_gzip_stream_with_a_bad_checksum_is_rejected(curator, row_counts):
    data = bytearray(gzip.compress(jsonl(DEMO_HUMANEVAL)))
    data[-8] ^= 0xFF  # the CRC-32 of the trailer
    before = row_counts()
    report = run_import(curator, bytes(data))
    assert "CRC check failed" in only_error(report)["message"]
    assert_rejected_without_writes(report, before, row_counts())


@pytest.mark.parametrize("data", [b"", b"\n  \n\r\n", gzip.compress(b"")], ids=["empty", "blank-lines", "empty-gzip"])
def test_a_file_without_tasks_is_an_error(curator, row_counts, data):
    before = row_counts()
    report = run_import(curator, data)
    error = only_error(report)
    assert (error["line"], error["message"]) == (0, "The file holds no tasks: every line is blank.")
    assert report.rejected == 1
    assert_rejected_without_writes(report, before, row_counts())


def test_a_byte_order_mark_and_crlf_line_ends_are_accepted(curator):
    data = b"\xef\xbb\xbf" + jsonl(*MBPP_ROWS).replace(b"\n", b"\r\n")
    report = run_import(curator, data)
    assert (report.errors, report.created) == ([], 3)


def test_the_report_is_plain_data(curator):
    report = run_import(curator, jsonl(DEMO_HUMANEVAL), dry_run=True)
    as_dict = report.to_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict
    assert set(as_dict) == {"format", "dry_run", "created", "updated", "unchanged", "rejected", "errors", "items"}
    assert report.summary() == "humaneval: 1 created, 0 updated, 0 unchanged, 0 rejected (dry run)"


def test_a_stdio_task_with_its_checker_or_interactor_and_generator_is_one_native_line_each(curator):
    """The platform's stdio JSONL: the native format carries a stdio task's cases, its
    checker or interactor, and its generator and validator, and reads them back."""
    stdio = {
        "suite_kind": "stdio",
        "entry_point": "",
        "starter_code": "",
        "test_setup": "",
        "visible_tests": [{"input": "1 2\n", "output": "3\n"}],
        "hidden_tests": [{"input": "2 2\n", "output": "4\n"}],
        "solutions": [{"role": "reference", "label": "sum", "code": "print(sum(map(int, input().split())))\n"}],
    }
    generator = {"language": "c", "source": "#include <stdio.h>\nint main() { puts(\"1 1\"); }\n", "count": 5,
                 "validator": {"language": "python", "source": "import sys\nsys.exit(0)\n"}}  # fmt: skip
    checker = {"mode": "checker", "language": "python", "source": "import sys\nsys.exit(0)\n"}
    interactor = {"mode": "interactor", "language": "cpp17", "source": "int main() {}\n"}
    rows = [
        native_row(slug="checked", version=VersionContent.parse(content_data(**stdio, comparator=checker,
                                                                                   test_generator=generator)).canonical(),
                   content_hash=None),
        native_row(slug="interactive", version=VersionContent.parse(content_data(**stdio, comparator=interactor))
                   .canonical(), content_hash=None),
    ]  # fmt: skip
    for row in rows:
        row.pop("content_hash")
    report = run_import(curator, "".join(json.dumps(r) + "\n" for r in rows).encode())
    assert (report.format, report.created) == ("native", 2), report.errors
    checked = Task.objects.get(slug="checked").latest_version
    assert checked.test_generator == generator and checked.comparator == checker
    assert Task.objects.get(slug="interactive").latest_version.comparator == interactor
    exported = {json.loads(line)["slug"]: json.loads(line) for line in tasks_export()}
    assert exported["checked"]["version"]["test_generator"] == generator
    # A generator where it cannot go is refused with the field's path, and nothing is written.
    bad = native_row(slug="bad", version={**rows[1]["version"], "test_generator": generator})
    bad.pop("content_hash")
    refused = run_import(curator, (json.dumps(bad) + "\n").encode())
    assert refused.created == 0 and "version.test_generator" in json.dumps(refused.errors), refused.errors
