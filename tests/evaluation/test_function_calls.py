"""Function tests in every language (suite kind function_calls), in real sandboxes: a
driver in the solution's language calls its function with each test's arguments, and
the judge compares what it returned by the declared type, outside the solution's
process. A right solution passes in each of the 12 languages and a wrong one fails
naming where it differs; a result of the wrong type, a solution that writes a result
line of its own, one with another signature, one that exits or spins inside the call:
each ends as the solution's failure, never a pass and never sandbox_error."""

from __future__ import annotations

import pytest

from evaluation.sandbox import compile_cache, engine
from evaluation.sandbox.drivers import MARKER, declaration, encode_args
from evaluation.sandbox.harness import call_values
from evaluation.sandbox.types import Limits, RunRequest, Status

from .conftest import needs_bwrap
from .function_samples import HIDDEN, LANGUAGES, RIGHT, SIGNATURE, VISIBLE, WRONG


@pytest.fixture(autouse=True)
def own_compile_cache(private_compile_cache):
    yield


def call(pool, language: str, source: str, *, signature=SIGNATURE, visible=VISIBLE, hidden=HIDDEN,
         comparator=None, wall_s: float = 20.0, entry_point: str = "top_k", backend: str = "bwrap"):  # fmt: skip
    tests = {"signature": signature, "visible": visible, "hidden": hidden}
    if comparator:
        tests["comparator"] = comparator
    request = RunRequest(suite_kind="function_calls", solution=source, tests=tests, entry_point=entry_point,
                         language=language, limits=Limits(wall_s=wall_s, cpu_s=wall_s, memory_mb=512))  # fmt: skip
    return engine.run(request, backend=backend, pool=pool)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_language_passes_its_right_function_and_fails_its_wrong_one(sandbox, language):
    backend, pool = sandbox
    right = call(pool, language, RIGHT[language], backend=backend)
    assert right.status == Status.PASSED, (right.status, right.message, [(t.name, t.message) for t in right.tests])
    assert len(right.tests) == 4
    wrong = call(pool, language, WRONG[language], backend=backend)
    assert wrong.status == Status.FAILED, (wrong.status, wrong.message)
    outcomes = {t.name: (t.outcome, t.message) for t in wrong.tests}
    assert outcomes["visible[0]"][0] == "passed", outcomes
    assert outcomes["hidden[0]"] == ("failed", "result[1]: expected 7, got 1"), outcomes


@needs_bwrap
def test_the_declaration_of_each_language_is_what_its_driver_calls(bwrap_pool):
    # A body written into each language's own declaration passes: the declarations the
    # prompt shows and the drivers agree.
    bodies = {
        "python": "return [max(xs)] if k else []", "c": "*out_len = 0;\nreturn xs;",
        "cpp17": "return {};", "java": "return new ArrayList<>();", "csharp": "return new List<long>();",
        "go": "return []int{}", "rust": "Vec::new()", "javascript": "return [];", "ruby": "[]",
        "php": "return [];", "lua": "return {}",
    }  # fmt: skip
    for language, body in bodies.items():
        source = declaration(language, SIGNATURE, "top_k", body)
        result = call(bwrap_pool, language, source, visible=[], hidden=[{"args": [[1, 2], 0], "expected": []}])
        assert result.status == Status.PASSED, (language, source, result.message, [t.message for t in result.tests])


@needs_bwrap
def test_a_program_is_built_once_whatever_the_tests(bwrap_pool, compiles):
    assert call(bwrap_pool, "cpp17", RIGHT["cpp17"]).status == Status.PASSED
    # Other tests, the same solution: the arguments go on stdin, so the build is the same.
    more = [{"args": [[3, 3, 1], 3], "expected": [3, 3, 1]}]
    assert call(bwrap_pool, "cpp17", RIGHT["cpp17"], visible=[], hidden=more).status == Status.PASSED
    assert compiles == ["cpp17"] and compile_cache.hits["memory"] >= 1


@needs_bwrap
@pytest.mark.parametrize(
    ("language", "source", "words"),
    [
        ("python", "def top_k(xs, k):\n    return tuple(sorted(xs, reverse=True)[:k])\n", "not a list[int]"),
        ("python", "def top_k(xs, k):\n    return [float(x) for x in sorted(xs, reverse=True)[:k]]\n",
         "not a int"),
        ("javascript", "function top_k(xs, k) { return xs.map(x => x + 0.5); }\n", "not a int"),
        ("ruby", "def top_k(xs, k)\n  nil\nend\n", "not a list[int]"),
        ("lua", "function top_k(xs, k) return 'nope' end\n", "not a list[int]"),
        ("php", "<?php\nfunction top_k($xs, $k) { return ['a' => 1]; }\n", "not a list[int]"),
    ],
)  # fmt: skip
def test_a_result_of_another_type_fails_saying_so(bwrap_pool, language, source, words):
    result = call(bwrap_pool, language, source, visible=VISIBLE, hidden=HIDDEN[:1])
    assert result.status == Status.FAILED, (result.status, result.message)
    assert any(words in t.message for t in result.tests), [t.message for t in result.tests]


@needs_bwrap
@pytest.mark.parametrize(
    ("language", "source", "status", "words"),
    [
        # Writes a result line of its own (the visible answer) and leaves before the driver.
        ("python", f"import os, sys\ndef top_k(xs, k):\n    sys.stdout.write('\\n{MARKER}\\n2 5 4\\n')\n"
                   "    sys.stdout.flush()\n    os._exit(0)\n", Status.FAILED, "result"),
        ("cpp17", "#include <cstdlib>\n#include <vector>\nstd::vector<long long> top_k(std::vector<long long> xs, "
                  "long long k) { std::exit(0); }\n", Status.FAILED, "no result"),
        ("java", "import java.util.*;\nclass Solution {\n  static List<Long> top_k(List<Long> xs, long k) "
                 "{ while (true) { } }\n}\n", Status.TIMEOUT, ""),
        # Another signature than the task's: it does not build with the driver.
        ("cpp17", "#include <vector>\nstd::vector<int> top_k(std::vector<int> xs, int k) { return xs; }\n",
         Status.COMPILE_ERROR, "top_k(xs: list[int], k: int) -> list[int]"),
        ("go", "package main\nfunc top_k(xs []int32, k int) []int32 { return xs }\n", Status.COMPILE_ERROR, "top_k"),
        ("c", "int *top_k(int *xs, size_t n, long long k, size_t *out) { *out = 0; return xs; }\n",
         Status.COMPILE_ERROR, ""),
        # Prints for itself before returning: only the driver's result counts.
        ("python", "def top_k(xs, k):\n    print('debug', xs)\n    return sorted(xs, reverse=True)[:k]\n",
         Status.PASSED, ""),
    ],
)  # fmt: skip
def test_hacks_and_mistakes_inside_the_call_are_the_solutions_own_result(bwrap_pool, language, source, status,
                                                                         words):  # fmt: skip
    result = call(bwrap_pool, language, source, wall_s=3.0)
    assert result.status == status, (result.status, result.message, [t.message for t in result.tests])
    said = result.message + " ".join(t.message for t in result.tests)
    assert words in said, said


@needs_bwrap
def test_floats_compare_within_the_tolerance_and_strings_exactly(bwrap_pool):
    signature = {"params": [{"name": "s", "type": "str"}, {"name": "x", "type": "float"}],
                 "returns": "list[float]"}  # fmt: skip
    source = "def f(s, x):\n    return [len(s) + 0.1 + 0.2, x / 3]\n"
    cases = [{"args": ["héllo ✓", 1.0], "expected": [7.3, 0.33333]}]
    strict = call(bwrap_pool, "python", source, signature=signature, visible=[], hidden=cases, entry_point="f")
    assert strict.status == Status.FAILED and "result[1]" in strict.tests[0].message, strict.tests[0].message
    loose = call(bwrap_pool, "python", source, signature=signature, visible=[], hidden=cases, entry_point="f",
                 comparator={"mode": "float", "abs_tol": 1e-5})  # fmt: skip
    assert loose.status == Status.PASSED, loose.tests[0].message
    echo = {"params": [{"name": "s", "type": "str"}], "returns": "str"}
    text = "tabs\tand\nnewlines, ✓ and \U0001f600"
    for language, body in (("go", "return s"), ("rust", "s"), ("java", "return s;"), ("c", "return s;")):
        result = call(bwrap_pool, language, declaration(language, echo, "f", body), signature=echo, visible=[],
                      hidden=[{"args": [text], "expected": text}], entry_point="f")  # fmt: skip
        assert result.status == Status.PASSED, (language, result.message, [t.message for t in result.tests])


def test_the_judge_reads_only_the_last_result_line_and_all_of_it():
    comparator = {"mode": "values", "returns": "list[int]"}
    assert call_values.mismatch(comparator, [1, 2], f"noise\n{MARKER}\n9\n\n{MARKER}\n2 1 2\n") is None
    assert "ends before" in call_values.mismatch(comparator, [1, 2], f"\n{MARKER}\n2 1\n")
    assert "more output" in call_values.mismatch(comparator, [1, 2], f"\n{MARKER}\n2 1 2 3\n")
    assert "no result" in call_values.mismatch(comparator, [1, 2], "2 1 2\n")
    assert "expected 2 element(s), got 3" in call_values.mismatch(comparator, [1, 2], f"\n{MARKER}\n3 1 2 3\n")
    floats = {"mode": "values", "returns": "float"}
    assert call_values.mismatch(floats, 1.0, f"\n{MARKER}\nnan\n") is not None
    assert call_values.mismatch(floats, 1.0, f"\n{MARKER}\n1.0000000000001\n") is None
    assert call_values.mismatch(floats, 1.0, f"\n{MARKER}\nInfinity\n") is not None
    bools = {"mode": "values", "returns": "bool"}
    assert "does not read" in call_values.mismatch(bools, True, f"\n{MARKER}\ntrue\n")


def test_arguments_go_in_as_tokens_every_driver_reads():
    signature = {"params": [{"name": "a", "type": "list[str]"}, {"name": "b", "type": "float"},
                            {"name": "c", "type": "bool"}], "returns": "int"}  # fmt: skip
    assert encode_args(signature, [["", "ab"], 1e-5, False]) == "2 s s6162 1e-05 0\n"
