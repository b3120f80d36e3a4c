"""The import_tasks and export_tasks management commands."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from tasks_app.models import State, Task, TaskVersion
from tasks_app.roles import CURATOR, has_role
from tasks_app.services import task_retire
from tests.factories import UserFactory, make_task
from tests.tasks_app.conftest import jsonl

DEMO = {
    "task_id": "Demo/1",
    "prompt": "def double(x):\n    pass\n",
    "canonical_solution": "    return 2 * x\n",
    "test": "def check(candidate):\n    assert candidate(2) == 4\n",
    "entry_point": "double",
}


def run(*args, **options):
    """Run a command; return (stdout, stderr), or raise its CommandError with the output attached."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err, **options)
    except CommandError as exc:
        exc.stdout, exc.stderr = out.getvalue(), err.getvalue()
        raise
    return out.getvalue(), err.getvalue()


@pytest.fixture
def demo_file(tmp_path):
    path = tmp_path / "demo.jsonl"
    path.write_bytes(jsonl(DEMO, dict(DEMO, task_id="Demo/2")))
    return path


@pytest.fixture(autouse=True)
def no_import_user_from_the_environment(monkeypatch):
    monkeypatch.delenv("PLATFORM_IMPORT_USER", raising=False)


def test_the_command_imports_humaneval_and_prints_a_summary(curator, humaneval_path):
    out, _ = run("import_tasks", str(humaneval_path), "--user", curator.username)
    assert out == "humaneval: 164 created, 0 updated, 0 unchanged, 0 rejected\n"
    assert Task.objects.count() == 164
    assert Task.objects.get(slug="humaneval-0").latest_version.changelog.startswith("Imported from ")


def test_a_dry_run_says_so_and_writes_nothing(curator, demo_file):
    out, _ = run("import_tasks", str(demo_file), "--dry-run", "--user", curator.username)
    assert out == "humaneval: 2 created, 0 updated, 0 unchanged, 0 rejected (dry run)\n"
    assert Task.objects.count() == 0


def test_importing_the_same_file_again_reports_it_unchanged(curator, demo_file):
    run("import_tasks", str(demo_file), "--user", curator.username)
    out, _ = run("import_tasks", str(demo_file), "--user", curator.username)
    assert out == "humaneval: 0 created, 0 updated, 2 unchanged, 0 rejected\n"
    assert TaskVersion.objects.count() == 2


def test_a_rejected_line_fails_the_command_and_prints_the_error_with_details(curator, tmp_path):
    path = tmp_path / "bad.jsonl"
    broken = DEMO["prompt"] + "    return (\n"
    path.write_bytes(jsonl(DEMO, dict(DEMO, task_id="Demo/2", entry_point="def", canonical_solution=broken)))

    with pytest.raises(CommandError) as caught:
        run("import_tasks", str(path), "--user", curator.username)

    assert str(caught.value) == "1 line(s) rejected; nothing was imported."
    assert caught.value.stdout == "humaneval: 0 created, 0 updated, 0 unchanged, 1 rejected\n"
    assert caught.value.stderr.splitlines() == [
        "line 2: demo-2: entry_point: 'def' is not a valid Python identifier. (and 1 more problem(s))",
        "    entry_point: 'def' is not a valid Python identifier.",
        "    canonical_solution: syntax error at line 5, column 12: '(' was never closed",
    ]
    assert Task.objects.count() == 0


def test_a_file_level_problem_fails_the_command(curator, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(CommandError) as caught:
        run("import_tasks", str(path), "--user", curator.username)
    assert caught.value.stderr == "file: The file holds no tasks: every line is blank.\n"


def test_a_refusal_by_the_services_fails_the_command_and_rolls_back(curator, tmp_path):
    retired = make_task(owner=curator, slug="demo-2")
    task_retire(actor=curator, task=retired, note="Gone.")
    path = tmp_path / "demo.jsonl"
    path.write_bytes(jsonl(DEMO, dict(DEMO, task_id="Demo/2")))

    with pytest.raises(CommandError):
        run("import_tasks", str(path), "--user", curator.username)

    assert not Task.objects.filter(slug="demo-1").exists()
    assert Task.objects.get(slug="demo-2").state == State.RETIRED


def test_a_missing_file_is_a_command_error_naming_the_path(db, tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(CommandError, match=f"No such file: {missing}"):
        run("import_tasks", str(missing))


def test_a_dash_reads_the_file_from_standard_input(curator):
    stdin = io.BytesIO(jsonl(DEMO))
    out, _ = run("import_tasks", "-", "--user", curator.username, stdin=stdin)
    assert out.startswith("humaneval: 1 created")
    assert Task.objects.get().latest_version.changelog == "Imported from humaneval"


def test_an_explicit_format_overrides_detection(curator, demo_file):
    with pytest.raises(CommandError):
        run("import_tasks", str(demo_file), "--format", "mbpp", "--user", curator.username)
    out, _ = run("import_tasks", str(demo_file), "--format", "humaneval", "--user", curator.username)
    assert out.startswith("humaneval: 2 created")


def test_an_unknown_format_is_refused_by_the_argument_parser(db, demo_file):
    with pytest.raises(CommandError, match="invalid choice: 'apps'"):
        run("import_tasks", str(demo_file), "--format", "apps")


def test_without_a_user_an_importer_curator_is_created_on_demand(db, demo_file):
    run("import_tasks", str(demo_file))
    importer = get_user_model().objects.get(username="importer")
    assert has_role(importer, CURATOR)
    assert not importer.has_usable_password()
    assert {t.owner_id for t in Task.objects.all()} == {importer.pk}

    run("import_tasks", str(demo_file))
    assert get_user_model().objects.filter(username="importer").count() == 1


def test_the_import_user_can_come_from_the_environment(curator, demo_file, monkeypatch):
    monkeypatch.setenv("PLATFORM_IMPORT_USER", curator.username)
    run("import_tasks", str(demo_file))
    assert {t.owner for t in Task.objects.all()} == {curator}
    assert not get_user_model().objects.filter(username="importer").exists()


def test_an_unknown_user_is_a_command_error(db, demo_file):
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        run("import_tasks", str(demo_file), "--user", "nobody")


def test_a_user_without_the_curator_role_imports_nothing(db, demo_file):
    reviewer = UserFactory(username="rhea", roles=["reviewer"])
    with pytest.raises(CommandError) as caught:
        run("import_tasks", str(demo_file), "--user", reviewer.username)
    assert caught.value.stderr.startswith("line 1: demo-1: Only curators can author tasks.")
    assert Task.objects.count() == 0


# -- export_tasks ---------------------------------------------------------------------------------------


def test_export_writes_native_jsonl_to_standard_output(curator):
    make_task(owner=curator, slug="b-task")
    make_task(owner=curator, slug="a-task")
    out, err = run("export_tasks")
    assert [json.loads(line)["slug"] for line in out.splitlines()] == ["a-task", "b-task"]
    assert out.endswith("\n")
    assert err == "Exported 2 task(s).\n"


def test_export_filters_by_state_and_tag(curator):
    make_task(owner=curator, slug="kept", tags=("keep",))
    make_task(owner=curator, slug="other-tag", tags=("other",))
    task_retire(actor=curator, task=make_task(owner=curator, slug="retired", tags=("keep",)), note="Gone.")
    out, _ = run("export_tasks", "--tag", "keep", "--state", "draft")
    assert [json.loads(line)["slug"] for line in out.splitlines()] == ["kept"]


def test_an_unknown_state_is_refused(db):
    with pytest.raises(CommandError, match="invalid choice"):
        run("export_tasks", "--state", "lost")


def test_export_to_a_file_then_import_gives_back_the_same_file(curator, tmp_path):
    make_task(owner=curator, slug="round-trip", title="Rund — trip ✓")
    first = tmp_path / "first.jsonl"
    run("export_tasks", "--output", str(first))
    Task.objects.all().delete()

    out, _ = run("import_tasks", str(first), "--user", curator.username)
    second = tmp_path / "second.jsonl"
    run("export_tasks", "--output", str(second))

    assert out == "native: 1 created, 0 updated, 0 unchanged, 0 rejected\n"
    assert second.read_bytes() == first.read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_export_to_an_unwritable_path_is_a_command_error(curator, tmp_path):
    with pytest.raises(CommandError, match="Cannot write"):
        run("export_tasks", "--output", str(tmp_path / "no-such-dir" / "out.jsonl"))


def test_standard_input_may_also_be_a_text_stream(curator):
    out, _ = run("import_tasks", "-", "--user", curator.username, stdin=io.StringIO(jsonl(DEMO).decode()))
    assert out.startswith("humaneval: 1 created")


def test_humaneval_imports_the_packaged_data_set_with_no_path(curator):
    out, _ = run("import_tasks", "--humaneval", "--user", curator.username)
    assert out == "humaneval: 164 created, 0 updated, 0 unchanged, 0 rejected\n"
    assert Task.objects.get(slug="humaneval-0").latest_version.changelog == "Imported from HumanEval.jsonl.gz"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), r'Give the PATH of a JSONL file \("-" for standard input\), or --humaneval\.'),
        (("tasks.jsonl", "--humaneval"), r"Give a PATH or --humaneval, not both \(got PATH 'tasks.jsonl'\)\."),
    ],
)
def test_a_path_and_humaneval_together_or_neither_is_an_error(curator, args, message):
    with pytest.raises(CommandError, match=message):
        run("import_tasks", *args, "--user", curator.username)
    assert Task.objects.count() == 0
