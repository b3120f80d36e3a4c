"""synthesize_repository_tasks: a tiny project in, repository task drafts out, each
reference shown to fix its task in the session engine."""

from __future__ import annotations

import io
import json
import tarfile
import urllib.error
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.verification.synthesis import (
    SynthesisRefused,
    repository_tasks_synthesize,
    source_tree_read,
)
from evaluation.verification.synthesis import service as synthesis_service
from evaluation.verification.synthesis.candidates import Candidate
from evaluation.verification.synthesis.drafts import DRAFT_NOTE
from evaluation.verification.synthesis.sources import SourceTree, sdist_from_pypi, tree_from_sdist
from evaluation.verification.synthesis.suite import parse_summary
from tasks_app.importers import tasks_import
from tasks_app.models import State, Task
from tasks_app.repository.patches import TreeFile, patches_check
from tests.repository_episodes import play, prepare, scratch_cache, verdict_spec

CORE = """\
def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    if not values:
        raise ValueError("no values")
    return sum(values) / len(values)
"""
TESTS = """\
from tinylib.core import clamp, mean


def test_clamp_raises_low_values():
    assert clamp(-5, 0, 10) == 0


def test_clamp_lowers_high_values():
    assert clamp(50, 0, 10) == 10


def test_clamp_keeps_values_inside():
    assert clamp(5, 0, 10) == 5


def test_mean():
    assert mean([1, 2, 6]) == 3
"""
TINY = {
    "tinylib/__init__.py": "",
    "tinylib/core.py": CORE,
    "tests/test_core.py": TESTS,
    "README.md": "# tinylib\n",
}


def write_project(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def cache_root() -> Iterator[Path]:
    with scratch_cache() as cache:
        yield cache.root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("tinylib"), TINY)


@pytest.fixture(scope="module")
def result(tiny: Path, cache_root: Path):
    return repository_tasks_synthesize(tree=source_tree_read(path=str(tiny)), cache_root=cache_root,
                                       max_mutants_per_function=30, seed=1)  # fmt: skip


# -- what the synthesis makes ------------------------------------------------------------------------


@pytest.mark.bwrap
def test_killed_mutants_become_tasks_and_survivors_are_counted_and_skipped(result):
    counts = result.counts
    assert counts.functions == 2 and result.tests == 4
    assert counts.killed > 0 and counts.survived > 0, counts
    assert counts.mutants == counts.killed + counts.survived + counts.timed_out
    assert counts.tasks == counts.killed == len(result.drafts)
    # A survivor: no test tells `value < low` from `value <= low`, or looks at an empty list.
    mutated = {draft.files["tinylib/core.py"][0].decode() for draft in result.drafts}
    assert CORE.replace("value < low", "value <= low") not in mutated
    assert len(mutated) == len(result.drafts), "identical mutated trees made into one task"


@pytest.mark.bwrap
def test_the_tests_of_each_task_split_the_green_suite(result):
    suite = {f"tests/test_core.py::{name}" for name in ("test_clamp_raises_low_values", "test_clamp_lowers_high_values",
                                                          "test_clamp_keeps_values_inside", "test_mean")}  # fmt: skip
    for draft in result.drafts:
        assert draft.fail_to_pass and set(draft.fail_to_pass) | set(draft.pass_to_pass) == suite
        assert not set(draft.fail_to_pass) & set(draft.pass_to_pass)
        assert set(draft.files) == set(TINY) and draft.files["tinylib/core.py"][0].decode() != CORE


@pytest.mark.bwrap
def test_every_reference_patch_applies_with_git_and_fixes_its_task_and_the_tree_fails(result, cache_root):
    with scratch_cache() as cache:
        for draft in result.drafts:
            tree = {path: TreeFile(data, executable) for path, (data, executable) in draft.files.items()}
            assert patches_check(tree, [draft.reference_patch])[0].applies, draft.slug
            environment = prepare(cache, draft.files)
            spec = verdict_spec(draft.content_data()["repository"])
            fixed = play(environment, spec, draft.reference_patch)
            assert fixed.reward == 1.0, (draft.slug, fixed.reason)
            broken = play(environment, spec, None)
            assert broken.reward == 0.0, (draft.slug, broken.reason)


@pytest.mark.bwrap
def test_statements_are_drafted_from_the_failing_tests(result):
    for draft in result.drafts:
        assert DRAFT_NOTE in draft.statement
        assert f"`{draft.function}`" in draft.statement and "`tinylib/core.py`" in draft.statement
        assert all(node in draft.statement for node in draft.fail_to_pass)
        assert draft.function in ("clamp", "mean") and draft.mutation  # kept for the curator, not the agent
        assert draft.mutation not in draft.statement
    # Assertion messages, trimmed to one line, tell the curator what went wrong.
    assert any("assert" in draft.statement for draft in result.drafts)


@pytest.mark.bwrap
def test_hide_failing_tests_moves_the_broken_tests_file_out_of_the_tree(tiny, cache_root):
    hidden = repository_tasks_synthesize(tree=source_tree_read(path=str(tiny)), cache_root=cache_root, max_tasks=2,
                                         hide_failing_tests=True)  # fmt: skip
    assert hidden.counts.tasks == 2
    for draft in hidden.drafts:
        assert "tests/test_core.py" not in draft.files
        assert draft.hidden_test_files == {"tests/test_core.py": TESTS}
        assert "(hidden from the agent)" in draft.statement


@pytest.mark.bwrap
def test_a_red_suite_is_refused_naming_the_failing_tests(tmp_path, cache_root):
    red = write_project(tmp_path, {**TINY, "tests/test_core.py": TESTS + "\n\ndef test_wrong():\n    assert 1 == 2\n"})
    with pytest.raises(SynthesisRefused) as refused:
        repository_tasks_synthesize(tree=source_tree_read(path=str(red)), cache_root=cache_root)
    assert "not green" in refused.value.message
    assert "tests/test_core.py::test_wrong" in refused.value.message and "assert 1 == 2" in refused.value.message


@pytest.mark.bwrap
def test_a_suite_that_collects_nothing_is_refused(tmp_path, cache_root):
    empty = write_project(tmp_path, {**TINY, "tests/test_core.py": "from tinylib.core import clamp\n"})
    with pytest.raises(SynthesisRefused, match="collected no tests"):
        repository_tasks_synthesize(tree=source_tree_read(path=str(empty)), cache_root=cache_root)


@pytest.mark.bwrap
def test_identical_mutated_trees_make_one_task(tiny, cache_root, monkeypatch):
    from evaluation.verification.mutants import generate_mutants

    mutant = generate_mutants(CORE, limit=1, families=("return_value",))[0]
    twice = [Candidate("tinylib/core.py", "clamp", mutant), Candidate("tinylib/core.py", "clamp", mutant)]
    monkeypatch.setattr(
        synthesis_service, "module_candidates", lambda path, *args, **kwargs: (2, twice) if "core" in path else (0, [])
    )
    made = repository_tasks_synthesize(tree=source_tree_read(path=str(tiny)), cache_root=cache_root)
    assert (made.counts.mutants, made.counts.duplicates, made.counts.tasks) == (1, 1, 1)


# -- bad inputs -------------------------------------------------------------------------------------------


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(SynthesisRefused, match="No such folder"):
        source_tree_read(path=str(tmp_path / "nowhere"))


def test_a_file_given_as_the_folder_is_refused(tmp_path):
    (tmp_path / "x.py").write_text("x = 1\n")
    with pytest.raises(SynthesisRefused, match="not a folder"):
        source_tree_read(path=str(tmp_path / "x.py"))


def test_a_project_without_python_modules_is_refused(tmp_path):
    folder = write_project(tmp_path, {"README.md": "# notes\n", "docs/index.md": "hello\n"})
    with pytest.raises(SynthesisRefused, match="not a Python project"):
        repository_tasks_synthesize(tree=source_tree_read(path=str(folder)))


def test_a_project_without_tests_is_refused(tmp_path):
    folder = write_project(tmp_path, {"tinylib/core.py": CORE})
    with pytest.raises(SynthesisRefused, match="no test files"):
        repository_tasks_synthesize(tree=source_tree_read(path=str(folder)))


def test_a_tree_over_the_caps_is_refused_naming_the_cap(tmp_path, settings):
    folder = write_project(tmp_path, TINY)
    settings.TASKS_REPO_MAX_FILES = 3
    with pytest.raises(SynthesisRefused, match="TASKS_REPO_MAX_FILES"):
        source_tree_read(path=str(folder))
    settings.TASKS_REPO_MAX_FILES, settings.TASKS_REPO_MAX_BYTES = 5000, 100
    with pytest.raises(SynthesisRefused, match="TASKS_REPO_MAX_BYTES"):
        source_tree_read(path=str(folder))


def test_caches_vcs_folders_and_files_over_the_file_cap_are_left_out(tmp_path, settings):
    folder = write_project(tmp_path, {**TINY, ".git/HEAD": "ref\n", "tinylib/__pycache__/core.cpython-311.pyc": "x",
                                      "assets/big.bin": "x" * 2000})  # fmt: skip
    settings.TASKS_REPO_MAX_FILE_BYTES = 1000
    tree = source_tree_read(path=str(folder))
    assert set(tree.files) == set(TINY)
    skipped = dict(tree.skipped)
    assert ".git" in skipped and "assets/big.bin" in skipped and "tinylib/__pycache__" in skipped


def test_an_sdist_that_is_not_an_archive_is_refused(tmp_path):
    fake = tmp_path / "tinylib-1.0.tar.gz"
    fake.write_text("this is not a tarball\n")
    with pytest.raises(SynthesisRefused, match="not a readable sdist"):
        source_tree_read(sdist=str(fake))
    with pytest.raises(SynthesisRefused, match="No such sdist"):
        source_tree_read(sdist=str(tmp_path / "missing.tar.gz"))


def test_a_local_sdist_unpacks_without_its_top_folder(tmp_path):
    archive = tmp_path / "tinylib-1.0.tar.gz"
    members = {**TINY, "PKG-INFO": "Metadata-Version: 2.1\nName: tinylib\n", "tinylib.egg-info/PKG-INFO": "x"}
    with tarfile.open(archive, "w:gz") as tar:
        for path, text in members.items():
            info = tarfile.TarInfo(f"tinylib-1.0/{path}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    tree = tree_from_sdist(archive)
    assert tree.name == "tinylib-1.0"
    assert set(tree.files) == {*TINY, "PKG-INFO"}
    assert tree.files["tinylib/core.py"] == (CORE.encode(), False)


def test_pypi_unreachable_fails_with_a_message_that_says_so(tmp_path, monkeypatch):
    # A stand-in for the network, which tests must not need.
    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr("urllib.request.urlopen", offline)
    with pytest.raises(SynthesisRefused, match="PyPI is not reachable from this machine"):
        sdist_from_pypi("tinylib==1.0", tmp_path)
    with pytest.raises(SynthesisRefused, match="not NAME or NAME==VERSION"):
        sdist_from_pypi("tinylib>=1; rm -rf /", tmp_path)


def test_exactly_one_source_is_needed():
    with pytest.raises(SynthesisRefused, match="exactly one"):
        source_tree_read()
    with pytest.raises(SynthesisRefused, match="exactly one"):
        source_tree_read(path=".", sdist="x.tar.gz")


def test_parse_summary_reads_node_ids_with_brackets_and_messages():
    output = ("....F\n=========== short test summary info ===========\n"
              "PASSED tests/test_a.py::test_one\n"
              "PASSED tests/test_a.py::test_p[a - b]\n"
              "FAILED tests/test_a.py::test_two[x] - AssertionError: assert 1 == 2\n"
              "ERROR tests/test_b.py - ImportError: no module\n"
              "SKIPPED [1] tests/test_c.py:3: later\n")  # fmt: skip
    outcomes, messages = parse_summary(output)
    assert outcomes == {"tests/test_a.py::test_one": "passed", "tests/test_a.py::test_p[a - b]": "passed",
                        "tests/test_a.py::test_two[x]": "failed", "tests/test_b.py": "error"}  # fmt: skip
    assert messages["tests/test_a.py::test_two[x]"] == "AssertionError: assert 1 == 2"


# -- the command ----------------------------------------------------------------------------------------------


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("synthesize_repository_tasks", *args, stdout=out)
    return out.getvalue()


@pytest.mark.bwrap
@pytest.mark.django_db
def test_the_command_writes_native_jsonl_that_the_importer_reads(tiny, tmp_path, curator, settings, cache_root):
    settings.SESSIONS = {**settings.SESSIONS, "ENVIRONMENTS_DIR": str(cache_root)}
    out = tmp_path / "tasks.jsonl"
    printed = run_command("--path", str(tiny), "--out", str(out), "--max-tasks", "3", "--seed", "2")
    assert "functions 2, mutants" in printed and "tasks 3" in printed
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 3 and all(line["format"] == "taskplatform.task/v1" for line in lines)
    report = tasks_import(actor=curator, data=out.read_bytes())
    assert report.ok and report.created == 3, report.errors
    assert set(Task.objects.values_list("state", flat=True)) == {State.DRAFT}


@pytest.mark.bwrap
@pytest.mark.django_db
def test_the_command_creates_draft_tasks_and_leaves_taken_slugs_alone(tiny, curator, settings, cache_root):
    settings.SESSIONS = {**settings.SESSIONS, "ENVIRONMENTS_DIR": str(cache_root)}
    first = run_command("--path", str(tiny), "--user", curator.username, "--max-tasks", "2")
    assert "created 2 task(s), 0 slug(s) taken" in first
    again = run_command("--path", str(tiny), "--user", curator.username, "--max-tasks", "2")
    assert "created 0 task(s), 2 slug(s) taken" in again
    task = Task.objects.first()
    assert task.state == State.DRAFT and task.latest_version.suite_kind == "repository"
    assert set(task.tags.values_list("name", flat=True)) >= {"repository", "synthesized"}


def test_the_command_refuses_bad_input_with_a_clear_message(tmp_path):
    with pytest.raises(CommandError, match="No such folder"):
        run_command("--path", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.jsonl"))
    with pytest.raises(CommandError, match="at least 1"):
        run_command("--path", str(tmp_path), "--out", str(tmp_path / "x.jsonl"), "--max-tasks", "0")


def test_a_source_tree_is_plain_data():
    tree = SourceTree(name="x", files={"a.py": (b"", False)})
    assert tree.skipped == []
