"""The four suite kinds in a real bubblewrap sandbox, and how outcomes are classified."""

from __future__ import annotations

import pytest

from evaluation.sandbox import counters, engine
from evaluation.sandbox.types import HASH_SEEDS, Limits, RunRequest, Status, hash_seed_for

LIMITS = Limits(wall_s=3, cpu_s=2, memory_mb=256)
ADD = "def add(a, b):\n    return a + b\n"


def request(kind: str, solution: str, hidden: list, *, visible: list = (), setup: str = "", **kw) -> RunRequest:
    tests = {"setup": setup, "visible": list(visible), "hidden": list(hidden)}
    return RunRequest(suite_kind=kind, solution=solution, tests=tests, entry_point="add", limits=LIMITS, **kw)


def explain(result) -> tuple:
    """What a failed assertion shows: enough to see why a run did not pass."""
    return result.message[-1000:], result.tests, result.stdout[-2000:], result.stderr[-2000:], result.signal


def run(sandbox, req):
    backend, pool = sandbox
    return engine.run(req, backend=backend, pool=pool)


@pytest.mark.parametrize(
    ("kind", "tests"),
    [
        ("assertions", ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]),
        (
            "check_function",
            ["def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"],
        ),
        ("pytest", ["from solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n"]),
    ],
)
def test_a_correct_solution_passes_every_kind(sandbox, kind, tests):
    result = run(sandbox, request(kind, ADD, tests))
    assert result.status == Status.PASSED, explain(result)
    assert result.tests and all(t.outcome == "passed" for t in result.tests)
    assert result.backend == sandbox[0] and result.runtime_fingerprint.startswith("sha256:")
    assert len(result.harness_version) == 64 and result.sandbox_id.startswith(f"{sandbox[0]}-")
    if sandbox[0] == "docker":
        assert result.image_digest.startswith("sha256:")


def test_stdio_compares_output_ignoring_trailing_whitespace(sandbox):
    program = "a, b = map(int, input().split())\nprint(a + b, '  ')\n"
    cases = [{"input": "1 2\n", "output": "3"}, {"input": "5 5\n", "output": "10\n\n"}]
    result = run(sandbox, request("stdio", program, cases))
    assert result.status == Status.PASSED, explain(result)
    wrong = run(sandbox, request("stdio", "print(42)\n", cases))
    assert wrong.status == Status.FAILED
    assert wrong.tests[0].message.startswith("line 1: expected")


def test_a_wrong_solution_fails_with_the_failing_test_named(sandbox):
    result = run(
        sandbox,
        request(
            "assertions",
            "def add(a, b):\n    return a - b\n",
            ["assert add(1, 0) == 1", "assert add(1, 2) == 3"],
            visible=["assert add(0, 0) == 0"],
        ),
    )
    assert result.status == Status.FAILED
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes == {"visible[0]": "passed", "hidden[0]": "passed", "hidden[1]": "failed"}


def test_a_syntax_error_is_an_error_not_a_failure(sandbox):
    result = run(sandbox, request("assertions", "def add(a, b)\n    return a\n", ["assert add(1, 2) == 3"]))
    assert result.status == Status.ERROR and "SyntaxError" in result.message


def test_an_exception_in_the_candidate_fails_that_test(sandbox):
    result = run(
        sandbox,
        request(
            "check_function",
            "def add(a, b):\n    raise ValueError('nope')\n",
            ["def check(candidate):\n    assert candidate(1, 2) == 3\n"],
        ),
    )
    assert result.status == Status.FAILED
    assert "ValueError: nope" in result.tests[0].message


def test_test_setup_runs_in_the_judge_before_the_tests(sandbox):
    result = run(sandbox, request("assertions", ADD, ["assert add(BASE, 1) == 11"], setup="BASE = 10"))
    assert result.status == Status.PASSED, explain(result)


def test_output_beyond_the_limit_is_truncated_with_a_marker(sandbox):
    noisy = "def add(a, b):\n    print('x' * 5000)\n    return a + b\n"
    req = RunRequest(
        suite_kind="assertions",
        solution=noisy,
        tests={"hidden": ["assert add(1, 2) == 3"] * 3},
        entry_point="add",
        limits=Limits(wall_s=3, cpu_s=2, output_bytes=4000),
    )
    result = run(sandbox, req)
    assert result.status == Status.OUTPUT_EXCEEDED
    assert "output truncated" in result.stdout and result.stdout.startswith("x" * 100)


def test_the_same_request_gives_the_same_result(sandbox):
    program = "import random\ndef add(a, b):\n    return a + b + random.randint(0, 1)\n"
    tests = [f"assert add({i}, 0) == {i}" for i in range(8)]
    first = run(sandbox, request("assertions", program, tests, seed=7))
    again = run(sandbox, request("assertions", program, tests, seed=7))
    assert [(t.name, t.outcome) for t in first.tests] == [(t.name, t.outcome) for t in again.tests]
    other = run(sandbox, request("assertions", program, tests, seed=8))
    assert [t.name for t in other.tests] != [t.name for t in first.tests]  # the order follows the seed


def test_the_hash_seed_follows_the_runs_seed(sandbox):
    """String hashing (set and dict order of strings) is fixed by the seed, and
    differs between seeds: repeats with different seeds can reveal a solution
    that depends on set order, and rerunning one seed reproduces it."""
    program = "def order():\n    return list({'apple', 'pear', 'fig', 'kiwi', 'plum', 'lime', 'date'})\n"
    probe = "assert order() == [], order()"  # fails, and its message shows the order the solution saw

    def seen(seed: int) -> tuple[str, str]:
        result = run(sandbox, request("assertions", program, [probe], seed=seed))
        return result.hash_seed, result.tests[0].message

    first = {seed: seen(seed) for seed in range(HASH_SEEDS)}
    assert [first[seed][0] for seed in range(HASH_SEEDS)] == [str(hash_seed_for(s)) for s in range(HASH_SEEDS)]
    assert len({message for _, message in first.values()}) > 1  # different seeds, different orders
    assert seen(3) == first[3] and seen(3 + HASH_SEEDS) == first[3]  # the same seed, the same order


@pytest.mark.parametrize("kind", ["assertions", "check_function"])
def test_a_solution_cannot_shadow_the_builtins_the_tests_use(sandbox, kind):
    """`abs`, `len` and `zip` in a test mean the builtins, whatever the solution defines."""
    hack = "def abs(*a, **k):\n    return 0\n\ndef len(*a):\n    return 0\n\ndef mean(xs):\n    return 12345.0\n"
    test = "abs(mean([1, 2]) - 1.5) < 1e-9 and len([1]) == 1"
    tests = [f"assert {test}"] if kind == "assertions" else [f"def check(candidate):\n    assert {test}\n"]
    result = run(sandbox, RunRequest(suite_kind=kind, solution=hack, tests={"hidden": tests}, entry_point="mean"))
    assert result.status == Status.FAILED, explain(result)


def test_every_execution_is_logged_and_counted(sandbox, caplog):
    counters.reset()
    with caplog.at_level("INFO", logger="evaluation.runs"):
        run(sandbox, request("assertions", ADD, ["assert add(1, 2) == 3"]))
    assert counters.snapshot()["executions"] == {f"{sandbox[0]}:passed": 1}
    import json

    line = json.loads(caplog.records[-1].getMessage())
    assert line["status"] == "passed" and len(line["request_digest"]) == 64 and line["attempts"] == 1


def test_a_candidates_objects_stay_in_its_process_and_are_used_through_handles(sandbox):
    stack = (
        "class Stack:\n    def __init__(self):\n        self.items = []\n"
        "    def push(self, x):\n        self.items.append(x)\n        return self\n"
        "    def pop(self):\n        if not self.items:\n            raise IndexError('pop from empty')\n"
        "        return self.items.pop()\n    def __len__(self):\n        return len(self.items)\n"
        "    def __eq__(self, other):\n        return True\n"
    )
    check = (
        "def check(Stack):\n    s = Stack()\n    s.push(1).push(2)\n    assert len(s) == 2 and s.items == [1, 2]\n"
        "    assert s.pop() == 2 and s.pop() == 1\n    try:\n        s.pop()\n    except IndexError as exc:\n"
        "        assert 'empty' in str(exc)\n    else:\n        raise AssertionError('no IndexError')\n"
        "    s.push(3)\n    assert s != Stack()  # the candidate's rigged __eq__ is never consulted\n"
    )
    req = RunRequest(suite_kind="check_function", solution=stack, tests={"hidden": [check]}, entry_point="Stack",
                     limits=LIMITS)  # fmt: skip
    result = run(sandbox, req)
    assert result.status == Status.PASSED, result.tests


def test_deeply_nested_plain_data_crosses_but_recursion_stays_pythons_own(sandbox):
    setup = "def deep(n):\n    v = ['core']\n    for _ in range(n):\n        v = [v]\n    return v\n"
    iterative = (
        "def add(v, _=None):\n    while isinstance(v, list):\n        v = v[0]\n    return v\n"
    )  # fmt: skip
    recursive = "def add(v, _=None):\n    return add(v[0]) if isinstance(v, list) else v\n"
    tests = ["assert add(deep(5000)) == 'core'"]
    assert run(sandbox, request("assertions", iterative, tests, setup=setup)).status == Status.PASSED
    assert run(sandbox, request("assertions", recursive, tests, setup=setup)).status == Status.FAILED


def test_the_runtime_fingerprint_names_the_sandboxs_pytest(sandbox):
    """Debian's pytest writes its version as `__version__ = version = '7.2.1'`: the greeting
    must read it, or every fingerprint says pytest:None whatever pytest the runs used."""
    _backend, pool = sandbox
    with pool.lease(1) as leased:
        version = leased.ready.get("pytest")
    assert version and version[0].isdigit(), leased.ready
