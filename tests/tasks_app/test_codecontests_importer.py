"""The CodeContests importer: a competitive-programming problem (in the shape of that
data set's lines, written here) becomes a stdio task in the language of its correct
solutions, with its limits, its tests and, where a line adds one, its checker."""

from __future__ import annotations

import copy

import pytest

from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.importers import tasks_import
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.tasks_app.conftest import jsonl
from tests.tasks_app.test_importers import assert_rejected_without_writes, only_error

SUM_PY = "a, b = map(int, input().split())\nprint(a + b)\n"
SUM_CPP = "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
WRONG_PY = "a, b = map(int, input().split())\nprint(a * b)\n"

ROW = {
    "name": "1000_A. Sum of Two",
    "description": "Read two integers $a$ and $b$ and print $a + b$.",
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["5 7\n", "-3 3\n"], "output": ["12\n", "0\n"]},
    "generated_tests": {"input": ["10 20\n", "2 2\n"], "output": ["30\n", "4\n"]},
    "solutions": {"language": [2, 3, 1, 3], "solution": [SUM_CPP, SUM_PY, "print input()", SUM_PY + "# twin\n"]},
    "incorrect_solutions": {"language": [3, 2], "solution": [WRONG_PY, SUM_CPP.replace("a + b", "a - b")]},
    "time_limit": {"seconds": 1, "nanos": 500000000},
    "memory_limit_bytes": 268435456,
    "source": 2,
    "difficulty": 7,
    "cf_contest_id": 1000,
    "cf_index": "A",
    "cf_points": 500.0,
    "cf_rating": 800,
    "cf_tags": ["math", "brute force", "*special"],
    "is_description_translated": False,
    "untranslated_description": "",
    "input_file": "",
    "output_file": "",
}


def row(**changes):
    data = copy.deepcopy(ROW)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def test_a_problem_becomes_a_stdio_task_in_the_first_language_it_is_solved_in(curator):
    report = tasks_import(actor=curator, data=jsonl(row()))
    assert (report.errors, report.format, report.created) == ([], "codecontests", 1)
    task = Task.objects.get()
    version = task.latest_version
    assert task.slug == "cc-1000-a-sum-of-two" and task.title == "1000_A. Sum of Two"
    assert sorted(tag.name for tag in task.tags.all()) == ["brute-force", "codecontests", "math", "special"]
    assert (version.language, version.suite_kind, version.entry_point) == ("python", "stdio", "")
    assert version.visible_tests == [{"input": "1 2\n", "output": "3\n"}]
    assert [case["output"] for case in version.hidden_tests] == ["12\n", "0\n", "30\n", "4\n"]
    assert (version.time_limit_s, version.memory_limit_mb) == (1.5, 256)
    roles = sorted((s.role, s.code) for s in version.solutions.all())
    assert roles == [("adversarial", WRONG_PY), ("reference", SUM_PY), ("reference", SUM_PY + "# twin\n")]


def test_without_python_3_the_task_is_cpp_and_a_line_may_add_its_checker(curator):
    checker = {"language": "python", "source": "import sys\nsys.exit(0)\n"}
    only_cpp = {"language": [2], "solution": [SUM_CPP]}
    report = tasks_import(actor=curator, data=jsonl(row(solutions=only_cpp, checker=checker, tags=["sums"])))
    assert report.errors == []
    version = Task.objects.get().latest_version
    assert version.language == "cpp17"
    assert version.comparator == {"mode": "checker", **checker}
    assert sorted(s.role for s in version.solutions.all()) == ["adversarial", "reference"]
    assert sorted(tag.name for tag in Task.objects.get().tags.all()) == ["codecontests", "sums"]


def test_a_line_may_add_an_interactor_or_a_generator_with_its_validator(curator):
    interactor = {"language": "cpp17", "source": "int main() {}\n"}
    generator = {"language": "python", "source": "import sys\nprint(1, 2)\n", "count": 30,
                 "validator": {"language": "python", "source": "import sys\nsys.exit(0)\n"}}  # fmt: skip
    report = tasks_import(actor=curator, data=jsonl(row(name="gen", generator=generator),
                                                    row(name="dialogue", interactor=interactor)))  # fmt: skip
    assert report.errors == [] and report.created == 2
    assert Task.objects.get(slug="cc-gen").latest_version.test_generator == generator
    assert Task.objects.get(slug="cc-dialogue").latest_version.comparator == {"mode": "interactor", **interactor}


def test_generated_tests_past_the_case_limit_are_left_out_and_at_most_fifty_kept(curator, settings):
    settings.TASKS_MAX_CODE_BYTES = 1000
    big = "9" * 2000 + "\n"
    generated = {
        "input": [big] + [f"{i} {i}\n" for i in range(60)],
        "output": ["0\n"] + [f"{2 * i}\n" for i in range(60)],
    }
    report = tasks_import(actor=curator, data=jsonl(row(generated_tests=generated)))
    assert report.errors == []
    hidden = Task.objects.get().latest_version.hidden_tests
    assert len(hidden) == 2 + 50 and all(case["input"] != big for case in hidden)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (
            {"solutions": {"language": [1, 0], "solution": ["print 1", "?"]}},
            "solutions.language",
            "No correct solution",
        ),
        ({"public_tests": {"input": ["1\n"], "output": []}}, "public_tests", "must pair up"),
        ({"public_tests": ["1 2\n"]}, "public_tests", "object of two lists"),
        ({"private_tests": {"input": [7], "output": ["7\n"]}}, "private_tests.input[0]", "Expected a string"),
        ({"solutions": {"language": ["cpp"], "solution": [SUM_CPP]}}, "solutions.language", "language codes"),
        ({"time_limit": 2}, "time_limit", "seconds"),
        ({"memory_limit_bytes": "256MB"}, "memory_limit_bytes", "number of bytes"),
        ({"input_file": "input.txt"}, "input_file", "stdio only"),
        ({"checker": "testlib"}, "checker", "Expected an object"),
        ({"checker": {"language": "cobol", "source": "x"}}, "checker.language", ""),
        ({"generator": "gen.cpp"}, "generator", "Expected an object"),
        ({"generator": {"language": "python"}}, "generator.source", "generator needs its source"),
        (
            {"checker": {"language": "python", "source": "x"}, "interactor": {"language": "python", "source": "x"}},
            "interactor",
            "not both",
        ),
        ({"oracle": "x"}, "oracle", "Unknown field"),
        ({"description": None}, "description", "required"),
    ],
)
def test_a_bad_line_is_refused_naming_the_source_field(curator, row_counts, changes, field, words):
    before = row_counts()
    report = tasks_import(actor=curator, data=jsonl(row(**changes)))
    error = only_error(report)
    assert field in error["details"], error
    assert words in " ".join(error["details"][field]), error
    assert_rejected_without_writes(report, before, row_counts())


@pytest.mark.bwrap
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("solutions", [None, {"language": [2], "solution": [SUM_CPP]}], ids=["python", "cpp17"])
def test_an_imported_problem_verifies_its_references_pass_and_its_incorrect_solutions_fail(curator, solutions):
    changes = {"solutions": solutions} if solutions else {}
    assert tasks_import(actor=curator, data=jsonl(row(**changes))).errors == []
    task = Task.objects.get()
    task_submit(actor=curator, task=task)
    verification = verification_run_inline(
        version=Task.objects.get().latest_version,
        config=VerifyConfig(repeats=2, mutants=4, probes=True, backend="bwrap", inputs=0),
    )
    statuses = {(e.role, e.subject, e.status) for e in verification.executions.all()}
    assert {status for role, _, status in statuses if role == "reference"} == {"passed"}, statuses
    assert {status for role, _, status in statuses if role == "adversarial"} == {"failed"}, statuses
    assert not {s for s in statuses if s[2] == "sandbox_error"} and not verification.summary["probe_passes"]
