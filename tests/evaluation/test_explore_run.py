"""The explore run kind (issue 22), in real sandboxes: it captures the calls a task's
own tests make to the reference, makes new inputs from them, keeps the ones the
reference answers validly, tells mutants apart with shrunk counterexamples, and
proposes tests, all as data in one run's record."""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace

import pytest

from evaluation.sandbox import engine, replay
from evaluation.sandbox.harness import explore_shrink, explore_values
from evaluation.sandbox.run_requests import explore_request_for
from evaluation.sandbox.types import Status

from .conftest import needs_bwrap

BIGGEST = "def biggest(xs):\n    return max(xs)\n"
# Tested only on lists whose largest element comes last: `xs[-1]` survives them.
BIGGEST_CHECK = (
    "def check(candidate):\n"
    "    assert candidate([1, 2, 3]) == 3\n"
    "    assert candidate([-5, 0, 7]) == 7\n"
    "    assert candidate([4]) == 4\n"
)
BIGGEST_CAPTURED = [([1, 2, 3],), ([-5, 0, 7],), ([4],)]
BIGGEST_MUTANTS = [
    ("last", "def biggest(xs):\n    return xs[-1]\n"),
    ("sorted", "def biggest(xs):\n    return sorted(xs)[-1]\n"),  # the same function
]


def version(kind: str, entry: str, hidden: list[str], *, visible: list[str] = (), setup: str = "",
            time_limit_s: float = 10.0) -> SimpleNamespace:  # fmt: skip
    """What explore_request_for reads of a task version."""
    return SimpleNamespace(suite_kind=kind, entry_point=entry, test_setup=setup, visible_tests=list(visible),
                           hidden_tests=list(hidden), memory_limit_mb=256, time_limit_s=time_limit_s)  # fmt: skip


def explore(pool, task, reference: str, mutants, *, seed: int = 1, inputs: int = 200, keep: int = 10,
            precondition: str = "", backend: str = "bwrap", **kw) -> dict:  # fmt: skip
    request = explore_request_for(task, reference=reference, mutants=list(mutants), seed=seed, inputs=inputs,
                                  keep=keep, precondition=precondition, **kw)  # fmt: skip
    result = engine.run(request, backend=backend, pool=pool, warm=pool is not None)  # no pool: a cold sandbox
    assert result.status == Status.PASSED, (result.status, result.message[-2000:], result.stderr[-2000:])
    data = result.data
    assert data is not None and data["generator"] == "explore-1"
    assert data["invalid"] == sum(data["invalid_reasons"].values())
    assert data["generated"] == data["valid"] + data["invalid"]
    json.dumps(data, allow_nan=False)  # JSON-ready as it is
    return data


def read(text: str):
    """A literal the data reports, read back as the judge checked it reads."""
    return ast.literal_eval(text)


def counterexample(data: dict, mutant: str) -> dict:
    found = data["mutants"][mutant]
    assert found["outcome"] == "differs", found
    return found["counterexample"]


# -- what it finds -----------------------------------------------------------------------------


@needs_bwrap
def test_a_mutant_the_tests_miss_is_told_apart_on_a_shrunk_input_and_an_equivalent_one_is_not(bwrap_pool):
    data = explore(bwrap_pool, version("check_function", "biggest", [BIGGEST_CHECK]), BIGGEST, BIGGEST_MUTANTS)

    assert data["captured"] == 3 and data["generated"] == 200 and data["valid"] >= 100
    assert data["complete"] is True
    found = counterexample(data, "last")
    (xs,) = read(found["args"])
    assert len(xs) == 2 and read(found["kwargs"]) == {}
    assert read(found["expected"]) == max(xs) and read(found["got"]) == xs[-1] != max(xs)
    assert found["raised"] is None and found["timed_out"] is False and found["literal"] is True
    equivalent = data["mutants"]["sorted"]
    assert equivalent["outcome"] == "same" and equivalent["tried"] >= 50 and equivalent["counterexample"] is None


@needs_bwrap
def test_proposals_are_literal_new_and_lead_with_the_counterexamples(bwrap_pool):
    data = explore(bwrap_pool, version("check_function", "biggest", [BIGGEST_CHECK]), BIGGEST, BIGGEST_MUTANTS)

    proposals = data["proposals"]
    assert 2 <= len(proposals) <= 10
    for proposal in proposals:
        args, kwargs, expected = read(proposal["args"]), read(proposal["kwargs"]), read(proposal["expected"])
        assert type(args) is tuple and kwargs == {}
        assert args not in BIGGEST_CAPTURED and proposal["source"] == "generated"
        assert expected == max(args[0])  # the reference's answer
        assert ("last" in proposal["kills"]) == (args[0][-1] != expected)
        assert "sorted" not in proposal["kills"]
    assert proposals[0]["args"] == counterexample(data, "last")["args"]
    assert len({p["expected"] for p in proposals}) > 2  # diverse outputs, not one value over and over


@needs_bwrap
def test_the_same_seed_gives_the_same_data_and_another_seed_other_inputs(bwrap_pool):
    task = version("assertions", "vowels", ["assert vowels('banana') == 3", "assert vowels('sky') == 0",
                                            "assert vowels('queue') == 4"])  # fmt: skip
    reference = "def vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())\n"
    mutants = [("case", "def vowels(s):\n    return sum(c in 'aeiou' for c in s)\n")]

    first = explore(bwrap_pool, task, reference, mutants, seed=5, inputs=120)
    again = explore(bwrap_pool, task, reference, mutants, seed=5, inputs=120)
    other = explore(bwrap_pool, task, reference, mutants, seed=6, inputs=120)

    assert first == again
    assert first["seed"] == 5 and other["seed"] == 6
    assert {p["args"] for p in first["proposals"]} != {p["args"] for p in other["proposals"]}
    (text,) = read(counterexample(first, "case")["args"])
    assert text.lower() != text and len(text) == 1  # one upper-case vowel


# -- what is not a valid input ---------------------------------------------------------------


@needs_bwrap
def test_inputs_the_reference_raises_on_are_invalid_and_counted(bwrap_pool):
    reference = (
        "def root(n):\n    if n < 0:\n        raise ValueError('no root of a negative number')\n"
        "    return int(n ** 0.5)\n"
    )
    task = version("check_function", "root", ["def check(f):\n    assert f(0) == 0\n    assert f(16) == 4\n"
                                              "    assert f(10) == 3\n"])  # fmt: skip
    data = explore(bwrap_pool, task, reference, [], inputs=100)

    assert data["invalid_reasons"]["raised"] >= 5
    assert data["valid"] > 0 and data["proposals"]
    assert all(read(p["args"])[0] >= 0 for p in data["proposals"])


@needs_bwrap
def test_a_precondition_refuses_inputs_and_they_are_counted(bwrap_pool):
    # It changes its arguments, too: the inputs the judge keeps must not change with it.
    precondition = (
        "def precondition(xs):\n    ok = len(xs) <= 3 and all(x >= 0 for x in xs)\n    xs.append(-1)\n    return ok\n"
    )
    data = explore(bwrap_pool, version("check_function", "biggest", [BIGGEST_CHECK]), BIGGEST, BIGGEST_MUTANTS,
                   precondition=precondition)  # fmt: skip

    assert data["invalid_reasons"]["precondition"] >= 20
    assert "precondition_error" not in data
    found = counterexample(data, "last")
    (xs,) = read(found["args"])
    assert len(xs) == 2 and min(xs) >= 0
    for proposal in data["proposals"]:
        (xs,) = read(proposal["args"])
        assert len(xs) <= 3 and min(xs) >= 0 and read(proposal["expected"]) == max(xs)


@needs_bwrap
def test_a_reference_that_hangs_on_some_inputs_costs_only_those_inputs(bwrap_pool):
    reference = "def double(n):\n    while n > 500:\n        pass\n    return 2 * n\n"
    task = version(
        "assertions", "double", ["assert double(1) == 2", "assert double(7) == 14", "assert double(-3) == -6"]
    )
    data = explore(bwrap_pool, task, reference, [("plus", "def double(n):\n    return n + n + (n % 7 == 3)\n")],
                   inputs=60)  # fmt: skip

    assert data["invalid_reasons"]["timeout"] >= 1
    assert data["valid"] >= 20 and data["complete"] is True
    assert read(counterexample(data, "plus")["args"])[0] % 7 == 3
    assert all(read(p["args"])[0] <= 500 for p in data["proposals"])


@needs_bwrap
def test_near_its_deadline_a_run_stops_and_reports_what_it_has_as_incomplete(bwrap_pool):
    reference = "import time\n\ndef slow(n):\n    time.sleep(0.02)\n    return n\n"
    task = version("assertions", "slow", ["assert slow(1) == 1", "assert slow(5) == 5"])
    mutants = [
        ("same", "import time\n\ndef slow(n):\n    time.sleep(0.02)\n    return abs(n) * (1 if n >= 0 else -1)\n")
    ]
    request = explore_request_for(task, reference=reference, mutants=mutants, seed=1, inputs=500, keep=5, wall_s=6)
    result = engine.run(request, backend="bwrap", pool=bwrap_pool)

    assert result.status == Status.PASSED and result.wall_s < 6
    data = result.data
    assert data["complete"] is False and 0 < data["generated"] < 500
    # Generation stopped with half the time left, for the mutants: this one met every valid input.
    assert data["mutants"]["same"] == {"outcome": "same", "tried": data["valid"] + 2, "counterexample": None}


# -- mutants that misbehave ------------------------------------------------------------------


@needs_bwrap
def test_a_timeout_proves_a_mutant_wrong_only_past_the_tasks_own_time_limit(bwrap_pool):
    """Outrunning the call budget (10 x the reference) makes a mutant slower, not wrong:
    a test fails it only if it outlasts the time limit the test runs under."""
    task = version("assertions", "size", ["assert size(3) == 3", "assert size(-4) == 4", "assert size(0) == 0"],
                   time_limit_s=2.0)  # fmt: skip
    mutants = [
        ("slower", "import time\n\ndef size(n):\n    if abs(n) > 40:\n        time.sleep(0.6)\n    return abs(n)\n"),
        ("hangs", "def size(n):\n    while abs(n) > 40:\n        pass\n    return abs(n)\n"),
    ]
    data = explore(bwrap_pool, task, "def size(n):\n    return abs(n)\n", mutants, inputs=120)

    slower = data["mutants"]["slower"]
    assert slower["outcome"] == "same" and slower["counterexample"] is None
    assert abs(read(slower["slower"]["args"])[0]) > 40 and 0.5 <= slower["slower"]["seconds"] < 2.0
    hangs = data["mutants"]["hangs"]
    example = hangs["counterexample"]
    assert hangs["outcome"] == "differs" and example["timed_out"] is True and example["timeout_s"] == 2.0
    assert abs(read(example["args"])[0]) > 40
    # Only the proven timeout names a mutant on a proposal: the slower one tells nothing apart.
    assert all("slower" not in p["kills"] for p in data["proposals"])
    assert any(p["kills"] == ["hangs"] for p in data["proposals"])


@needs_bwrap
def test_mutants_that_hang_exit_or_kill_themselves_differ_and_the_run_completes(bwrap_pool):
    mutants = [
        ("hangs", "def biggest(xs):\n    while True:\n        pass\n"),
        ("exits", "import os\n\ndef biggest(xs):\n    os._exit(3)\n"),
        ("killed", "import os, signal\n\ndef biggest(xs):\n    os.kill(os.getpid(), signal.SIGKILL)\n"),
        ("system_exit", "import sys\n\ndef biggest(xs):\n    sys.exit(0)\n"),
        ("hangs_on_long", "def biggest(xs):\n    while len(xs) > 3:\n        pass\n    return max(xs)\n"),
        ("no_load", "def biggest(xs)\n"),
        ("last", BIGGEST_MUTANTS[0][1]),
    ]
    data = explore(bwrap_pool, version("check_function", "biggest", [BIGGEST_CHECK]), BIGGEST, mutants)

    assert data["complete"] is True
    assert counterexample(data, "hangs")["timed_out"] is True
    assert counterexample(data, "exits")["raised"].startswith("ProcessExit:")
    assert "signal 9" in counterexample(data, "killed")["raised"]
    assert counterexample(data, "system_exit")["raised"].startswith("SystemExit")
    long = counterexample(data, "hangs_on_long")
    assert long["timed_out"] is True and len(read(long["args"])[0]) == 4  # shrunk to the shortest that hangs
    assert data["mutants"]["no_load"] == {"outcome": "not_loaded", "tried": 0, "counterexample": None}
    assert len(read(counterexample(data, "last")["args"])[0]) == 2  # the others did not get in its way


@needs_bwrap
def test_a_mutant_cannot_change_the_judges_copy_of_the_arguments(bwrap_pool):
    task = version("check_function", "head", ["def check(c):\n    assert c([3, 1, 2]) == 3\n    assert c([5]) == 5\n"])
    mutants = [
        ("sorts", "def head(xs):\n    xs.sort()\n    return xs[0]\n"),
        ("clears", "def head(xs):\n    first = xs[0]\n    xs.clear()\n    xs.append(-999)\n    return first\n"),
    ]
    data = explore(bwrap_pool, task, "def head(xs):\n    return xs[0]\n", mutants)

    found = counterexample(data, "sorts")
    (xs,) = read(found["args"])
    assert read(found["expected"]) == xs[0] and read(found["got"]) == min(xs) != xs[0]
    assert data["mutants"]["clears"]["outcome"] == "same"
    assert all(read(p["expected"]) == read(p["args"])[0][0] for p in data["proposals"])


# -- the kinds of task -------------------------------------------------------------------------


@needs_bwrap
def test_an_mbpp_assertions_task_is_explored(bwrap_pool):
    task = version("assertions", "remove_odd", ["assert remove_odd([1, 2, 3]) == [2]",
                                                "assert remove_odd([2, 4, 6]) == [2, 4, 6]",
                                                "assert remove_odd([10, 20, 3]) == [10, 20]"])  # fmt: skip
    reference = "def remove_odd(l):\n    return [x for x in l if x % 2 == 0]\n"
    mutants = [
        ("positive", "def remove_odd(l):\n    return [x for x in l if x % 2 == 0 and x > 0]\n"),
        ("filter", "def remove_odd(l):\n    return list(filter(lambda x: not x % 2, l))\n"),
    ]
    data = explore(bwrap_pool, task, reference, mutants)

    assert data["captured"] == 3
    (xs,) = read(counterexample(data, "positive")["args"])
    assert len(xs) == 1 and xs[0] <= 0 and xs[0] % 2 == 0
    assert data["mutants"]["filter"]["outcome"] == "same" and data["mutants"]["filter"]["tried"] >= 50


@needs_bwrap
def test_annotations_fill_a_parameter_the_tests_never_pass(bwrap_pool):
    reference = "def pad(s: str, width: int = 5) -> str:\n    return s.ljust(width, '.')\n"
    task = version("assertions", "pad", ["assert pad('ab') == 'ab...'", "assert pad('hello') == 'hello'"])
    mutants = [("fixed", "def pad(s, width=5):\n    return s.ljust(5, '.')\n")]
    data = explore(bwrap_pool, task, reference, mutants)

    found = counterexample(data, "fixed")
    assert "width" in read(found["kwargs"])


@needs_bwrap
def test_a_task_whose_tests_pass_nothing_is_explored_from_its_annotations(bwrap_pool):
    reference = "def add(a: int, b: int) -> int:\n    return a + b\n"
    data = explore(bwrap_pool, version("assertions", "add", []), reference,
                   [("minus", "def add(a, b):\n    return a - b\n")], inputs=50)  # fmt: skip

    assert data["captured"] == 0 and data["valid"] >= 20
    assert read(counterexample(data, "minus")["args"]) in ((0, 1), (0, -1))


@needs_bwrap
def test_a_reference_that_does_not_load_is_an_error(bwrap_pool):
    request = explore_request_for(version("check_function", "biggest", [BIGGEST_CHECK]), reference="def biggest(",
                                  mutants=BIGGEST_MUTANTS, seed=1, inputs=10, keep=2)  # fmt: skip
    result = engine.run(request, backend="bwrap", pool=bwrap_pool)
    assert result.status == Status.ERROR and "SyntaxError" in result.message
    assert result.data is None


@pytest.mark.docker
def test_the_docker_backend_explores_too():
    data = explore(None, version("check_function", "biggest", [BIGGEST_CHECK]), BIGGEST, BIGGEST_MUTANTS,
                   backend="docker", inputs=80)  # fmt: skip
    assert len(read(counterexample(data, "last")["args"])[0]) == 2
    assert data["mutants"]["sorted"]["outcome"] == "same"


# -- the request ---------------------------------------------------------------------------------


def test_an_explore_request_is_kept_for_replay_and_loads_back_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_REPLAY_DIR", str(tmp_path))
    request = explore_request_for(version("check_function", "biggest", [BIGGEST_CHECK]), reference=BIGGEST,
                                  mutants=BIGGEST_MUTANTS, seed=3, inputs=200, keep=10, precondition="",
                                  call_budget_s=0.75)  # fmt: skip
    assert request.suite_kind == "explore" and request.limits.wall_s == request.limits.cpu_s == 60
    assert request.tests["mutants"][0] == {"id": "last", "code": BIGGEST_MUTANTS[0][1]}
    body = replay.request_body(request)
    digest = replay.digest_of(body)
    replay.store(body, digest)
    assert replay.load(digest) == request


def test_only_function_tasks_can_be_explored():
    with pytest.raises(ValueError, match="stdio"):
        explore_request_for(version("stdio", "", []), reference="print(1)", mutants=[], seed=0, inputs=1, keep=1)


# -- values, as the judge compares and reports them ---------------------------------------------


def test_outputs_compare_as_the_generated_test_will_floats_close_and_the_rest_by_equality():
    same = explore_values.same
    assert same([1.0, {"a": (2, 0.1 + 0.2)}], [1, {"a": (2, 0.3)}])
    assert same(float("nan"), float("nan")) and same(1e-12, 0.0)
    # within 1e-6 of max(1, |expected|): what the test's _close accepts, no tighter
    assert same(0.0, 7.6e-7) and same(1e9, 1e9 + 900) and not same(0.0, 2e-6) and not same(1e9, 1e9 + 2000)
    assert not same([1.0], (1.0,)) and not same(1.0, 1.01) and not same({"a": 1}, {"b": 1})
    # no float expected: Python's ==, as `assert got == want` checks (True == 1, 1 == 1.0)
    assert same(True, 1) and same(1, 1.0) and not same([1], (1,)) and not same("1", 1)
    assert not same(explore_values.Opaque([1, "Node", 0]), explore_values.Opaque([1, "Node", 0]))
    assert not same([1], [explore_values.Opaque([1, "Node", 0])])


def test_a_mutant_told_apart_is_one_its_generated_test_fails():
    from evaluation.verification.generated.tests_text import hidden_test

    cases = [((0.0,), 7.6e-7), ((0.0,), 3e-6), ((True,), 1), (([1, 2],), (1, 2)), (([0.5, 2],), [0.5, 2.0000001]),
             (({"k": 1.0},), {"k": 1.1}), ((3,), 3.0), ((2.5,), 2), ((1.0,), True), ((0.5,), "0.5")]  # fmt: skip
    for (expected,), got in cases:
        test = hidden_test(suite_kind="check_function", entry_point="f", args="()", kwargs="{}",
                           expected=repr(expected), note="n")  # fmt: skip
        scope: dict = {}
        exec(test, scope)  # noqa: S102 - a test this module just wrote
        try:
            scope["check"](lambda got=got: got)
            passes = True
        except AssertionError:
            passes = False
        assert passes == explore_values.same(expected, got), (expected, got)


def test_only_values_that_read_back_the_same_are_literal():
    literal = explore_values.literal
    assert literal(([1, -2.5, "x"], {"k": (None, True)})) == "([1, -2.5, 'x'], {'k': (None, True)})"
    assert literal(set()) == "set()"
    assert literal(float("nan")) is None and literal(float("inf")) is None
    assert literal(10**5000) is None  # too long for repr
    from collections import Counter

    assert literal(Counter("aab")) is None


def test_shrink_variants_cut_before_they_simplify_and_none_changes_the_input():
    given = (([5, -3, "ab", [2.5]],), {"k": 4})
    before = repr(given)
    found = list(explore_shrink.variants(*given))
    assert found[0] == (([],), {"k": 4}) and found[1] == (([5, -3],), {"k": 4})
    lighter = [v for v in found if explore_values.weight(v) < explore_values.weight(given)]
    assert len(lighter) > 0.9 * len(found)  # the others ("a" for "A") the exploration skips
    assert (([],), {"k": 4}) in found and (([5, -3, "ab", [2.5]],), {}) in found
    assert (([5, 3, "ab", [2.5]],), {"k": 4}) in found and (([5, -3, "ab", [2.0]],), {"k": 4}) in found
    assert repr(given) == before
