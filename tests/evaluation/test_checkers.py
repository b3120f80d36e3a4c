"""Special judges in real sandboxes: a task's checker program (testlib's contract)
accepts any right answer, names wrong and malformed ones, is built once, runs in a
sandbox of its own on outputs the solution's run collected, and when it fails
(its own failure code, a crash, a spin, a memory bomb, a compile error) the run is
`checker_error`: never the solution's failure, never a pass."""

from __future__ import annotations

import pytest

from evaluation.sandbox import engine, replay, special_judges
from evaluation.sandbox.types import Limits, RunRequest, Status
from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tests.factories import content_data

from .checker_samples import (
    PAIR_C,
    PAIR_CASES,
    PAIR_CPP,
    PAIR_PYTHON,
    PAIR_SOLUTION_MALFORMED,
    PAIR_SOLUTION_OTHER,
    PAIR_SOLUTION_WRONG,
)
from .conftest import needs_bwrap


@pytest.fixture(autouse=True)
def own_compile_cache(private_compile_cache):
    """Every test here builds in a compile cache of its own (conftest.py)."""


def judged(backend, pool, solution: str, *, checker: str = PAIR_PYTHON, checker_language: str = "python",
           language: str = "python", wall_s: float = 5.0):  # fmt: skip
    tests = {"visible": PAIR_CASES[:1], "hidden": PAIR_CASES[1:],
             "comparator": {"mode": "checker", "language": checker_language, "source": checker}}  # fmt: skip
    request = RunRequest(suite_kind="stdio", solution=solution, tests=tests, language=language,
                         limits=Limits(wall_s=wall_s, cpu_s=wall_s))  # fmt: skip
    return engine.run(request, backend=backend, pool=pool)


def test_a_checker_accepts_another_right_answer_and_names_wrong_and_malformed_ones(sandbox):
    backend, pool = sandbox
    right = judged(backend, pool, PAIR_SOLUTION_OTHER)
    assert right.status == Status.PASSED, (right.message, [(t.name, t.message) for t in right.tests])
    assert [t.outcome for t in right.tests] == ["passed"] * 3
    assert right.data["checker"]["status"] == "passed" and right.data["checker"]["request_digest"]
    # The same output against the jury's answer line by line fails the case the checker accepts.
    plain = RunRequest(suite_kind="stdio", solution=PAIR_SOLUTION_OTHER,
                       tests={"visible": PAIR_CASES[:1], "hidden": PAIR_CASES[1:]})  # fmt: skip
    assert engine.run(plain, backend=backend, pool=pool).status == Status.FAILED

    wrong = judged(backend, pool, PAIR_SOLUTION_WRONG)
    assert wrong.status == Status.FAILED
    failed = {t.name: t.message for t in wrong.tests if t.outcome == "failed"}
    assert set(failed) == {"hidden[1]"}, failed
    assert failed["hidden[1]"] == "wrong answer: -3 + 1 != 0"

    malformed = judged(backend, pool, PAIR_SOLUTION_MALFORMED)
    assert malformed.status == Status.PRESENTATION_ERROR, malformed.message
    assert all(t.message.startswith("presentation error: expected two indices") for t in malformed.tests)


@needs_bwrap
def test_a_compiled_checker_is_built_once_and_judges_a_compiled_solution(bwrap_pool, monkeypatch):
    compiles = []
    real = engine.run

    def counting(request, **kw):
        if request.suite_kind == "compile":
            compiles.append(request.language)
        return real(request, **kw)

    monkeypatch.setattr(engine, "run", counting)
    for solution, language, status in [(PAIR_C, "c", Status.PASSED), (PAIR_SOLUTION_WRONG, "python", Status.FAILED),
                                       (PAIR_SOLUTION_MALFORMED, "python", Status.PRESENTATION_ERROR)]:  # fmt: skip
        result = judged("bwrap", bwrap_pool, solution, checker=PAIR_CPP, checker_language="cpp17", language=language)
        assert result.status == status, (language, result.message)
    assert sorted(compiles) == ["c", "cpp17"]  # the checker once for three runs


FAILING_CHECKERS = [
    ("import sys; sys.exit(3)", "reported its own failure"),
    ("import sys; sys.exit(7)", "partial points"),
    ("import sys; sys.exit(42)", "exited with code 42"),
    ("raise RuntimeError('the checker has a bug')", "crashed"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "signal 11"),
    ("while True:\n    pass", "CPU time"),
    ("import time; time.sleep(60)", "ran past its 3 s of wall time"),
    ("blob = bytearray(2 << 30)", "memory"),
]


@needs_bwrap
@pytest.mark.parametrize(("checker", "said"), FAILING_CHECKERS)
def test_a_failing_checker_is_checker_error_never_the_solutions(bwrap_pool, checker, said, monkeypatch):
    monkeypatch.setattr(special_judges, "CHECKER_CASE_S", 2.0)
    result = judged("bwrap", bwrap_pool, PAIR_SOLUTION_OTHER, checker=checker)
    assert result.status == Status.CHECKER_ERROR, (result.status, result.message)
    assert said in result.message, result.message


@needs_bwrap
def test_a_checker_that_does_not_compile_or_chokes_on_hostile_output_is_checker_error(bwrap_pool):
    broken = judged("bwrap", bwrap_pool, PAIR_SOLUTION_OTHER, checker="int main( {", checker_language="cpp17")
    assert broken.status == Status.CHECKER_ERROR and "does not compile" in broken.message
    # A checker that trusts the output's shape: an output made to crash it earns nothing.
    naive = "import sys\nint(open(sys.argv[2]).read().split()[0])\nsys.exit(0)\n"
    hostile = judged("bwrap", bwrap_pool, "input(); input(); print('x')", checker=naive)
    assert hostile.status == Status.CHECKER_ERROR and "crashed" in hostile.message


@needs_bwrap
def test_the_solutions_own_failure_stands_and_the_checker_never_sees_an_unrun_test(bwrap_pool):
    spin = judged("bwrap", bwrap_pool, "while True:\n    pass", wall_s=1.0)
    assert spin.status == Status.TIMEOUT and spin.data is None
    build = judged("bwrap", bwrap_pool, "int main( {", language="c")
    assert build.status == Status.COMPILE_ERROR and build.data is None
    crash = judged("bwrap", bwrap_pool, "raise SystemExit(4)")
    assert crash.status == Status.FAILED and crash.data is None
    assert all("exit code 4" in t.message for t in crash.tests)


@needs_bwrap
def test_the_solutions_run_never_carries_the_checker_and_the_checkers_never_the_solution(bwrap_pool):
    seen = []

    def recording(request):
        seen.append(request)
        return engine.run(request, backend="bwrap", pool=bwrap_pool)

    tests = {"visible": PAIR_CASES[:1], "hidden": PAIR_CASES[1:],
             "comparator": {"mode": "checker", "language": "python", "source": PAIR_PYTHON}}  # fmt: skip
    request = RunRequest(suite_kind="stdio", solution=PAIR_SOLUTION_OTHER, tests=tests)
    assert special_judges.run_with_checker(request, recording).status == Status.PASSED
    solution_run, checker_run = seen
    assert solution_run.tests["comparator"] == {"mode": "collect"} and PAIR_PYTHON not in repr(solution_run)
    assert checker_run.suite_kind == "check" and PAIR_SOLUTION_OTHER not in repr(checker_run)
    assert {c["name"] for c in checker_run.tests["cases"]} == {"visible[0]", "hidden[0]", "hidden[1]"}


@needs_bwrap
def test_the_run_is_kept_for_replay_whole_checker_included(bwrap_pool):
    first = judged("bwrap", bwrap_pool, PAIR_SOLUTION_WRONG)
    again = engine.run(replay.load(first.request_digest), backend="bwrap", pool=bwrap_pool)
    assert (again.status, [t.outcome for t in again.tests]) == (first.status, [t.outcome for t in first.tests])


def checker_content(**comparator) -> dict:
    return content_data(
        suite_kind="stdio", entry_point="", starter_code="", test_setup="",
        visible_tests=PAIR_CASES[:1], hidden_tests=PAIR_CASES[1:],
        solutions=[{"role": "reference", "label": "ref", "code": PAIR_SOLUTION_OTHER}],
        comparator={"mode": "checker", "language": "python", "source": PAIR_PYTHON, **comparator},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"language": "cobol"}, "comparator.language", "Unknown checker language"),
        ({"language": None}, "comparator.language", "Unknown checker language"),
        ({"source": ""}, "comparator.source", "needs its source"),
        ({"source": 12}, "comparator.source", "needs its source"),
        ({"source": "x" * 200_001}, "comparator.source", "the limit is 200000"),
        ({"source": "a\x00b"}, "comparator.source", "NUL"),
        ({"abs_tol": 0.1}, "comparator.abs_tol", "decides for itself"),
        ({"timeout": 3}, "comparator.timeout", "Unknown field"),
    ],
)
def test_a_bad_checker_is_refused_naming_the_field(changes, path, words):
    with pytest.raises(ValidationFailed) as caught:
        VersionContent.parse(checker_content(**changes))
    assert any(words in m for m in caught.value.details.get(path, [])), caught.value.details


def test_a_checker_is_part_of_the_hash_and_a_tolerance_mode_has_no_source():
    content = VersionContent.parse(checker_content())
    assert content.canonical()["comparator"]["source"] == PAIR_PYTHON
    other = VersionContent.parse(checker_content(source=PAIR_PYTHON + "\n"))
    assert other.content_hash() != content.content_hash()
    data = checker_content()
    data["comparator"] = {"mode": "tokens", "source": PAIR_PYTHON}
    with pytest.raises(ValidationFailed) as caught:
        VersionContent.parse(data)
    assert "comparator.source" in caught.value.details
