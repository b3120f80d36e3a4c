"""Repository tasks: validation, the hash, the blob store, immutability, JSONL import and export."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from tasks_app.content import VersionContent
from tasks_app.errors import ImmutableVersionError, ValidationFailed
from tasks_app.importers import tasks_export, tasks_import
from tasks_app.models import Blob, Task, TaskVersion
from tasks_app.repository.paths import DEFAULT_PROTECTED_PATHS, is_protected
from tasks_app.services import task_create, task_version_create
from tests.factories import content_data
from tests.tasks_app import repository_sample as sample

# Hashes of program-kind content computed before repository tasks existed (on main):
# adding the kind must not move a single existing hash.
ASSERTIONS_HASH = "f3da4d746df0b77f4ca9694cdc3a87ba845d8456074feaa464a7360705a939b6"
STDIO_HASH = "d0fb8281c722f2f55e810e215b81a4a72657466cd1ae5051340efc837858b279"


def parse(data: dict[str, Any]) -> VersionContent:
    return VersionContent.parse(data)


def problems(data: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as caught:
        VersionContent.parse(data)
    return caught.value.details


def with_repo(**changes: Any) -> dict[str, Any]:
    data = sample.content_data()
    data["repository"].update(changes)
    return data


def create_sample(actor: Any, *, slug: str = "textstats", data: dict[str, Any] | None = None) -> Task:
    return task_create(actor=actor, slug=slug, title="textstats", content=parse(data or sample.content_data()))


# -- the hash ---------------------------------------------------------------------------------


def test_program_kinds_hash_exactly_as_before_repository_tasks():
    assert parse(content_data()).content_hash() == ASSERTIONS_HASH
    stdio = content_data(
        suite_kind="stdio",
        entry_point="",
        visible_tests=[],
        hidden_tests=[{"input": "1 2\n", "output": "3\n"}],
        solutions=[],
    )
    assert parse(stdio).content_hash() == STDIO_HASH
    assert "repository" not in parse(content_data()).canonical()


def test_the_hash_is_stable_and_the_same_from_every_form_of_input():
    first = parse(sample.content_data()).content_hash()
    assert parse(sample.content_data()).content_hash() == first
    listed_backwards = with_repo(fail_to_pass=list(reversed(sample.task_meta()["fail_to_pass"])))
    assert parse(listed_backwards).content_hash() == first  # node ids are a set
    as_base64 = sample.content_data()
    readme = sample.members()["repo/README.md"]
    as_base64["repository"]["files"]["README.md"] = {"base64": base64.b64encode(readme).decode()}
    assert parse(as_base64).content_hash() == first


CHANGE_IDS = [
    "file-content",
    "file-added",
    "file-removed",
    "executable-bit",
    "fail_to_pass",
    "pass_to_pass",
    "setup",
    "hidden-file",
]
CHANGE_IDS += ["protected", "patch-removed", "patch-changed", "statement"]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["repository"]["files"].__setitem__("README.md", "changed\n"),
        lambda d: d["repository"]["files"].__setitem__("NEW.txt", "new\n"),
        lambda d: d["repository"]["files"].pop("assets/logo.png"),
        lambda d: d["repository"]["files"].__setitem__("scripts/run_tests.sh", {"text": "#!/bin/sh\n"}),
        lambda d: d["repository"]["fail_to_pass"].pop(),
        lambda d: d["repository"]["pass_to_pass"].pop(),
        lambda d: d["repository"]["setup_commands"].append("true"),
        lambda d: d["repository"]["hidden_test_files"].__setitem__("tests/test_more.py", "def test_x(): pass\n"),
        lambda d: d["repository"].__setitem__("protected_paths", ["tests/**"]),
        lambda d: d["solutions"].pop(),
        lambda d: d["solutions"][1].__setitem__("code", d["solutions"][1]["code"].replace("return 3", "return 4")),
        lambda d: d.__setitem__("statement", "Fix it."),
    ],
    ids=CHANGE_IDS,
)
def test_the_hash_changes_when_any_part_changes(change):
    base = parse(sample.content_data()).content_hash()
    data = copy.deepcopy(sample.content_data())
    change(data)
    assert parse(data).content_hash() != base


def test_protected_paths_default_when_the_author_gives_none_and_the_defaults_match_tests():
    repo = parse(sample.content_data()).repository
    assert repo.protected_paths == tuple(sorted(DEFAULT_PROTECTED_PATHS))
    assert parse(with_repo(protected_paths=[])).repository.protected_paths == repo.protected_paths
    for path in ("tests/test_words.py", "conftest.py", "pkg/conftest.py", "test_a.py", "a/b/test_c.py", "tox.ini"):
        assert is_protected(path, repo.protected_paths), path
    for path in ("textstats/words.py", "README.md", "latest.py"):
        assert not is_protected(path, repo.protected_paths), path


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/etc/passwd", "absolute"),
        ("../outside.py", "'..'"),
        ("src/../../x.py", "'..'"),
        (".git/config", ".git"),
        ("sub/.GIT/hooks/pre-commit", ".git"),
        ("a\x00b", "NUL"),
        ("a\nb.py", "control"),
        ("a\\b.py", "backslash"),
        ("", "empty"),
        ("C:/x.py", "absolute"),
    ],
)
def test_it_refuses_bad_paths_naming_the_path(path, words):
    data = sample.content_data()
    data["repository"]["files"][path] = "x = 1\n"
    details = problems(data)
    key = f"repository.files[{json.dumps(path, ensure_ascii=False)}]"
    assert key in details and words in " ".join(details[key]), details


def test_it_refuses_two_names_of_one_path_and_a_file_that_is_also_a_directory():
    dup = sample.content_data()
    dup["repository"]["files"]["./README.md"] = "again\n"
    assert "Duplicate path" in " ".join(problems(dup)['repository.files["README.md"]'])
    clash = sample.content_data()
    clash["repository"]["files"]["README.md/inner.txt"] = "x\n"
    assert "is a file" in json.dumps(problems(clash))


def test_it_refuses_a_tree_over_the_caps(settings):
    settings.TASKS_REPO_MAX_FILE_BYTES = 200
    assert "the limit for one file is 200" in json.dumps(problems(sample.content_data()))
    settings.TASKS_REPO_MAX_FILE_BYTES = 10_000
    settings.TASKS_REPO_MAX_BYTES = 500
    assert "The tree is too large" in " ".join(problems(sample.content_data())["repository.files"])
    settings.TASKS_REPO_MAX_BYTES = 10_000
    settings.TASKS_REPO_MAX_FILES = 3
    assert "Too many files: 6, the limit is 3" in " ".join(problems(sample.content_data())["repository.files"])


def test_it_refuses_an_empty_fail_to_pass():
    details = problems(with_repo(fail_to_pass=[]))
    assert "At least one test is required" in " ".join(details["repository.fail_to_pass"])


@pytest.mark.parametrize(
    "node",
    [
        "test_words",  # no ::
        "tests/test_words.py::",  # no name
        "tests/test_words.py",
        "/abs/test_x.py::test_a",
        "tests/../test_x.py::test_a",
        "tests/test_words.txt::test_a",  # not a .py file
        "tests/test_nowhere.py::test_a",  # no such file
        "tests/test_words.py::test_a::",
    ],
)
def test_it_refuses_a_malformed_node_id(node):
    details = problems(with_repo(pass_to_pass=[node]))
    assert "repository.pass_to_pass[0]" in details, details


def test_it_refuses_a_test_in_both_lists_and_a_duplicate_node_id():
    f2p = sample.task_meta()["fail_to_pass"]
    assert "also in fail_to_pass" in json.dumps(problems(with_repo(pass_to_pass=[f2p[0]])))
    assert "Duplicate node id" in json.dumps(problems(with_repo(fail_to_pass=[f2p[0], f2p[0]])))


def test_it_refuses_a_patch_that_does_not_apply_saying_where():
    data = sample.content_data()
    data["solutions"][0]["code"] = data["solutions"][0]["code"].replace('-    return text.split(" ")', "-    return 1")
    details = problems(data)
    message = " ".join(details["solutions[0].code"])
    assert "does not apply" in message and "textstats/words.py" in message


def test_it_refuses_an_empty_patch_and_a_patch_that_is_not_a_diff():
    data = sample.content_data()
    data["solutions"][1]["code"] = "print('hello')\n"
    assert "does not apply" in " ".join(problems(data)["solutions[1].code"])


def test_a_reference_patch_may_not_touch_a_protected_path_but_an_adversarial_one_may():
    hack = (
        "diff --git a/tests/test_words.py b/tests/test_words.py\n--- a/tests/test_words.py\n"
        "+++ b/tests/test_words.py\n@@ -1,3 +1,4 @@\n from textstats import longest_word, word_count\n"
        "+import pytest\n \n \n"
    )
    data = sample.content_data()
    data["solutions"][0]["code"] = hack
    assert "changes protected path(s) tests/test_words.py" in " ".join(problems(data)["solutions[0].code"])
    data = sample.content_data()
    data["solutions"][1]["code"] = hack
    assert parse(data).solutions  # an adversarial patch that edits tests is what probes are for


def test_program_fields_are_refused_on_a_repository_task_and_the_repository_on_others():
    details = problems(sample.content_data(entry_point="f", hidden_tests=["assert True"]))
    assert "entry_point" in details and "hidden_tests" in details
    assert "repository" in problems(content_data(repository={"files": {"a.py": ""}}))
    assert "repository" in problems({"statement": "x", "suite_kind": "repository"})


# -- saved versions -----------------------------------------------------------------------------


def test_a_saved_version_reads_back_with_the_same_hash(curator):
    version = create_sample(curator).latest_version
    content = VersionContent.from_version(version)
    assert version.content_hash == content.content_hash() == parse(sample.content_data()).content_hash()
    assert version.repository["manifest"]["scripts/run_tests.sh"]["executable"] is True


def test_blobs_are_stored_once_however_many_versions_and_tasks_share_them(curator):
    create_sample(curator, slug="one")
    count = Blob.objects.count()
    assert count == 6
    create_sample(curator, slug="two")
    task = Task.objects.get(slug="one")
    data = sample.content_data()
    data["repository"]["files"]["NEW.txt"] = "only new bytes are stored\n"
    task_version_create(actor=curator, task=task, content=parse(data))
    assert Blob.objects.count() == count + 1
    blob = Blob.objects.get(sha256=task.versions.get(number=2).repository["manifest"]["NEW.txt"]["sha256"])
    assert bytes(blob.data) == b"only new bytes are stored\n"


def test_repository_versions_and_blobs_are_immutable(curator):
    version = create_sample(curator).latest_version
    with pytest.raises(ImmutableVersionError):
        TaskVersion.objects.filter(pk=version.pk).update(repository={})
    blob = Blob.objects.first()
    with pytest.raises(ImmutableVersionError):
        blob.save()
    with pytest.raises(ImmutableVersionError):
        Blob.objects.filter(pk=blob.pk).update(data=b"tampered")
    # The database refuses too, whatever the code path.
    for sql, params in (
        ("UPDATE tasks_app_taskversion SET repository = NULL WHERE id = %s", [version.pk]),
        ("UPDATE tasks_app_blob SET data = %s WHERE sha256 = %s", [b"x", blob.pk]),
    ):
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)


def test_the_database_refuses_a_repository_version_without_its_repository(curator):
    version = create_sample(curator).latest_version
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tasks_app_taskversion (task_id, number, statement, language, entry_point, starter_code, "
            "suite_kind, test_setup, visible_tests, hidden_tests, time_limit_s, memory_limit_mb, changelog, "
            "author_id, content_hash, created_at) VALUES (%s, 9, 's', 'python', '', '', 'repository', '', '[]', "
            "'[]', 1, 64, '', %s, %s, now())",
            [version.task_id, curator.pk, "0" * 64],
        )


# -- JSONL import and export ---------------------------------------------------------------------


def test_native_jsonl_imports_a_repository_task_and_exports_it_back_byte_for_byte(curator, make_jsonl):
    report = tasks_import(actor=curator, data=make_jsonl(sample.native_object()), fmt="native")
    assert report.errors == [] and report.created == 1
    task = Task.objects.get(slug=sample.task_meta()["slug"])
    assert task.latest_version.suite_kind == "repository"
    exported = "".join(tasks_export())
    line = json.loads(exported)
    assert line["content_hash"] == task.latest_version.content_hash
    assert line["version"]["repository"]["files"]["assets/logo.png"]["base64"]
    again = tasks_import(actor=curator, data=exported.encode(), fmt="native")
    assert again.unchanged == 1 and "".join(tasks_export()) == exported


def test_a_bad_repository_line_is_reported_with_its_field_path_and_nothing_is_written(curator, make_jsonl, row_counts):
    bad = sample.native_object()
    bad["version"]["repository"]["files"]["../escape.py"] = "x"
    before = row_counts()
    report = tasks_import(actor=curator, data=make_jsonl(sample.native_object(), bad), fmt="native")
    assert report.rejected and row_counts() == before and Blob.objects.count() == 0
    assert 'version.repository.files["../escape.py"]' in report.errors[0]["details"]
