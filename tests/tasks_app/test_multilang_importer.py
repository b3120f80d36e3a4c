"""The multi-language function-task importer (MultiPL-E's shape, tests kept as data): a
problem in one language a line becomes a function_calls task in that language, with
its prompt as starter code, its first tests visible and the rest hidden; the same
problem in several languages is several tasks sharing a tag; bad lines are refused
naming the source's field, and nothing of the file is written."""

from __future__ import annotations

import copy

import pytest

from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.importers import tasks_import
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.evaluation.function_samples import HIDDEN, RIGHT, SIGNATURE, VISIBLE, WRONG
from tests.tasks_app.conftest import jsonl
from tests.tasks_app.test_importers import assert_rejected_without_writes, only_error

ROW = {
    "name": "Top K",
    "language": "go",
    "entry_point": "top_k",
    "prompt": (
        "package main\n\n// top_k returns the k largest values of xs, largest first.\n"
        "func top_k(xs []int, k int) []int {\n"
    ),
    "signature": SIGNATURE,
    "tests": VISIBLE + HIDDEN,
    "solutions": [RIGHT["go"]],
    "incorrect_solutions": [WRONG["go"]],
    "tags": ["sorting"],
    "stop_tokens": ["\nfunc", "\n//"],
}


def row(**changes):
    data = copy.deepcopy(ROW)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.mark.django_db
def test_a_problem_in_each_language_becomes_a_function_task_of_that_language(curator):
    lines = [row(), row(language="rust", prompt="", statement="The k largest values of xs, largest first.",
                        solutions=[RIGHT["rust"]], incorrect_solutions=[])]  # fmt: skip
    report = tasks_import(actor=curator, data=jsonl(*lines))
    assert (report.errors, report.format, report.created) == ([], "multilang", 2)
    go = Task.objects.get(slug="top-k-go").latest_version
    assert (go.language, go.suite_kind, go.entry_point, go.signature) == ("go", "function_calls", "top_k", SIGNATURE)
    assert go.starter_code == ROW["prompt"] and go.statement == ROW["prompt"]
    assert go.visible_tests == VISIBLE and go.hidden_tests == HIDDEN
    assert sorted((s.role, s.label) for s in go.solutions.all()) == [("adversarial", "incorrect 1"),
                                                                     ("reference", "reference 1")]  # fmt: skip
    rust = Task.objects.get(slug="top-k-rust")
    assert sorted(t.name for t in rust.tags.all()) == ["multilang", "sorting", "top-k"]
    # The same file again: nothing new (idempotent by content hash).
    again = tasks_import(actor=curator, data=jsonl(*lines))
    assert (again.created, again.unchanged) == (0, 2)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.bwrap
def test_an_imported_problem_verifies_in_its_language(curator):
    line = row(language="java", solutions=[RIGHT["java"]], incorrect_solutions=[WRONG["java"]], prompt=None,
               statement="The k largest values of xs, largest first.")  # fmt: skip
    report = tasks_import(actor=curator, data=jsonl(line))
    assert report.errors == []
    task = Task.objects.get(slug="top-k-java")
    task_submit(actor=curator, task=task)
    config = VerifyConfig(repeats=1, mutants=0, probes=False, backend="bwrap", inputs=0)
    verification = verification_run_inline(version=Task.objects.get(pk=task.pk).latest_version, config=config)
    runs = {(e.role, e.status) for e in verification.executions.all()}
    assert runs == {("reference", "passed"), ("adversarial", "failed")}, runs


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"language": "cobol"}, "language", "Unknown value"),
        ({"signature": {"params": [{"name": "xs", "type": "list[int]"}], "returns": "set[int]"}},
         "signature.returns", "not a type"),
        ({"tests": []}, "tests", "non-empty list"),
        ({"tests": [VISIBLE[0], {"args": [[1], "two"], "expected": [1]}]}, "tests[1:][0].args[1]", "an int"),
        ({"tests": [{"args": [[1], 1], "expected": [1]}, {"args": [[1], 1]}]}, "tests[1:][0].expected", "required"),
        ({"visible": 5}, "visible", "at least one test stays hidden"),
        ({"solutions": []}, "solutions", "At least one correct solution"),
        ({"solutions": "func top_k() {}"}, "solutions", "list of programs"),
        ({"entry_point": "main"}, "entry_point", "reserved"),
        ({"canonical_solution": "x"}, "canonical_solution", "Unknown"),
        ({"prompt": None, "statement": None}, "statement", "Give a statement"),
    ],
)  # fmt: skip
def test_a_bad_line_is_refused_naming_the_source_field(curator, row_counts, changes, field, words):
    before = row_counts()
    report = tasks_import(actor=curator, data=jsonl(row(), row(name="Other", **changes)))
    error = only_error(report)
    assert error["line"] == 2 and field in error["details"], error
    assert words in " ".join(error["details"][field]), error
    assert_rejected_without_writes(report, before, row_counts())
