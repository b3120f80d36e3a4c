"""What crosses between the judge and the solution's process, end to end in a real
bubblewrap sandbox: the references the plain-data boundary used to reject pass,
Python's == holds between the values rebuilt, and no method of the candidate's
decides a comparison."""

from __future__ import annotations

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.types import Limits, RunRequest, Status

from .conftest import needs_bwrap

pytestmark = needs_bwrap
LIMITS = Limits(wall_s=5, cpu_s=5, memory_mb=256)


def run(pool, solution: str, tests: list[str], *, kind: str = "assertions", setup: str = "", entry: str = ""):
    request = RunRequest(suite_kind=kind, solution=solution, tests={"setup": setup, "visible": [], "hidden": tests},
                         entry_point=entry, limits=LIMITS)  # fmt: skip
    return engine.run(request, backend="bwrap", pool=pool)


def explain(result) -> tuple:
    return result.status, result.message[-600:], [(t.name, t.outcome, t.message[-600:]) for t in result.tests]


# -- the three references public data showed rejected ------------------------------------------

FILTER_BY_TYPE = """from typing import Any, List


def filter_by_type(values: List[Any], kind: type) -> List[Any]:
    return [v for v in values if type(v) is kind]
"""
COUNT_LETTERS = """from collections import Counter


def count_letters(text):
    return Counter(c for c in text.lower() if c.isalpha())
"""
LARGEST_INT = """import sys


def largest_int():
    return sys.maxsize
"""


@pytest.mark.parametrize(
    ("solution", "wrong", "tests"),
    [
        (FILTER_BY_TYPE, FILTER_BY_TYPE.replace("is kind", "is not kind"),
         ["assert filter_by_type([1, 'a', 2.5, 3, True], int) == [1, 3]",
          "assert filter_by_type(['x', 1, None], type(None)) == [None]",
          "assert filter_by_type([(1,), [2], {3}], list) == [[2]]"]),
        (COUNT_LETTERS, COUNT_LETTERS.replace("c.isalpha()", "True"),
         ["assert count_letters('Aab b') == {'a': 2, 'b': 2}", "assert count_letters('') == {}",
          "assert count_letters('zz').most_common(1) == [('z', 2)]"]),
        (LARGEST_INT, LARGEST_INT.replace("sys.maxsize", "2 ** 31 - 1"),
         ["assert largest_int() == sys.maxsize", "assert largest_int() > 2 ** 62"]),
    ],
)  # fmt: skip
def test_the_references_the_boundary_rejected_pass_and_their_wrong_twins_fail(bwrap_pool, solution, wrong, tests):
    """A type as an argument, a Counter compared with a dict, a test using `sys` that only
    the solution imports: each passed in one process and was rejected by the judge."""
    assert run(bwrap_pool, solution, tests).status == Status.PASSED, explain(run(bwrap_pool, solution, tests))
    assert run(bwrap_pool, wrong, tests).status == Status.FAILED


def test_a_test_sees_the_modules_and_names_the_solution_imports_as_the_judges_own(bwrap_pool):
    solution = (
        "import math as m\nimport os.path\nfrom collections import OrderedDict, deque as dq\nfrom math import sqrt\n"
        "from fractions import Fraction\n\ndef f(x):\n    return Fraction(x, 2)\n"
    )
    tests = [
        "assert f(1) == m.pi / m.pi / 2 == sqrt(1) / 2",
        "assert isinstance(OrderedDict(), dict) and dq([1], maxlen=1).maxlen == 1",
        "assert os.path.join('a', 'b') == 'a/b'",
        "assert f(3) == Fraction(3, 2) and type(f(3)) is Fraction",  # the judge's Fraction: genuinely the same class
    ]
    result = run(bwrap_pool, solution, tests)
    assert result.status == Status.PASSED, explain(result)


def test_what_the_tests_define_themselves_wins_over_the_solutions_imports(bwrap_pool):
    solution = "import json as math\nfrom operator import not_ as abs\n\ndef f(x):\n    return x\n"
    tests = ["import math\nassert math.sqrt(f(4)) == 2", "assert abs(f(-3)) == 3", "assert abs(f(1) - 5) > 1"]
    result = run(bwrap_pool, solution, tests, setup="")
    assert result.status == Status.PASSED, explain(result)


def test_a_solution_cannot_bind_a_standard_function_over_a_builtin_the_tests_use(bwrap_pool):
    """`from operator import not_ as abs` would make `abs(got - want) < 1e-6` true for any
    wrong answer: names that shadow builtins are never bound."""
    solution = "from operator import not_ as abs\nfrom operator import truth as all\n\ndef area(r):\n    return 1.0\n"
    result = run(bwrap_pool, solution, ["assert abs(area(2) - 12.566) < 1e-3", "assert all([area(1) == 3.14])"])
    assert result.status == Status.FAILED
    assert all(t.outcome == "failed" for t in result.tests), explain(result)


def test_pytest_tests_import_what_the_solution_imports(bwrap_pool):
    module = (
        "from solution import Counter, count_letters, sys\n\n\ndef test_counts():\n"
        "    assert count_letters('aa') == Counter(a=2) == {'a': 2}\n    assert sys.maxsize > 0\n"
    )
    result = run(bwrap_pool, COUNT_LETTERS + "import sys\n", [module], kind="pytest")
    assert result.status == Status.PASSED, explain(result)


# -- values: what == means -------------------------------------------------------------------

VALUES = """import collections, datetime, decimal, fractions


Point = collections.namedtuple("Point", "x y")


def values():
    return {
        "ordered": collections.OrderedDict([("a", 1), ("b", 2)]),
        "default": collections.defaultdict(list, {"k": [1]}),
        "window": collections.deque([1, 2, 3], maxlen=3),
        "point": Point(1, 2),
        "money": decimal.Decimal("2.50"),
        "half": fractions.Fraction(1, 2),
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "day": datetime.date(2024, 1, 2),
        "span": datetime.timedelta(hours=36),
        "raw": bytearray(b"ab"),
        "steps": range(0, 10, 5),
        "z": 1 + 2j,
        "kinds": (int, str, len),
    }
"""


def test_standard_library_values_cross_and_compare_as_in_one_process(bwrap_pool):
    tests = [
        "v = values()\nassert v['ordered'] == {'b': 2, 'a': 1} and list(v['ordered']) == ['a', 'b']",
        "v = values()\nv['default']['new'].append(2)\nassert v['default'] == {'k': [1], 'new': [2]}",
        "v = values()\nv['window'].append(4)\nassert list(v['window']) == [2, 3, 4]",
        "v = values()\nassert v['point'] == (1, 2) and v['point'].y == 2 and v['point']._asdict() == {'x': 1, 'y': 2}",
        "from decimal import Decimal\nv = values()\nassert v['money'] == Decimal('2.5') == 2.5",
        "v = values()\nassert str(v['money']) == '2.50'",
        "v = values()\nassert v['half'] == 0.5 and v['half'] * 2 == 1",
        "import datetime\nv = values()\nassert v['when'].isoformat() == '2024-01-02T03:04:05+00:00'",
        "import datetime\nv = values()\nassert v['when'].date() == v['day'] and v['span'].days == 1",
        "v = values()\nassert v['raw'] == b'ab' and list(v['steps']) == [0, 5] and v['z'].imag == 2",
        "v = values()\nassert v['kinds'] == (int, str, len) and v['kinds'][0] is int",
    ]
    result = run(bwrap_pool, VALUES, tests)
    assert result.status == Status.PASSED, explain(result)


def test_a_counter_subclass_with_a_rigged_eq_is_compared_by_its_counts(bwrap_pool):
    rigged = (
        "from collections import Counter\n\nclass Rigged(Counter):\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n\ndef count_letters(text):\n    return Rigged('wrong')\n"
    )
    tests = [
        "assert count_letters('aab') == {'a': 2, 'b': 1}",
        "assert not (count_letters('ab') != Counter('ab'))",
        "assert count_letters('ab') == Counter({'a': 1, 'b': 1, 'z': 0})",  # a Counter's ==: missing counts are 0
    ]
    result = run(bwrap_pool, rigged, tests, setup="from collections import Counter")
    assert result.status == Status.FAILED
    assert [t.outcome for t in result.tests] == ["failed", "failed", "failed"], explain(result)
    honest = rigged.replace("Rigged('wrong')", "Rigged(text)")
    assert run(bwrap_pool, honest, tests, setup="from collections import Counter").status == Status.PASSED


@pytest.mark.parametrize("base", ["int", "str", "list", "dict", "tuple", "float"])
def test_a_builtin_subclass_with_rigged_methods_is_judged_by_its_value(bwrap_pool, base):
    """Its ==, !=, <, bool, len, in and arithmetic are those of the value it holds,
    rebuilt in the judge: none of its own methods is asked."""
    rigged = (
        f"class Rigged({base}):\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n    def __lt__(self, other):\n        return True\n"
        "    def __bool__(self):\n        return True\n    def __len__(self):\n        return 99\n"
        "    def __contains__(self, item):\n        return True\n    def __sub__(self, other):\n        return 0\n"
        "    __hash__ = object.__hash__\n\n"
        f"def answer(x):\n    return Rigged()\n"
    )
    tests = [
        "assert answer(1) == 7302915", "assert not (answer(1) != 7302915)", "assert answer(1) < -1",
        "assert answer(1)", "assert len(answer(1)) == 99", "assert 7302915 in answer(1)",
        "assert abs(answer(1) - 7302915) < 1e-9",
    ]  # fmt: skip
    result = run(bwrap_pool, rigged, tests)
    assert result.status == Status.FAILED
    assert not [t for t in result.tests if t.outcome == "passed"], explain(result)


def test_an_int_enum_member_works_as_its_int_and_keeps_its_name(bwrap_pool):
    solution = (
        "import enum\n\nclass Color(enum.IntEnum):\n    RED = 1\n    BLUE = 2\n\ndef pick(n):\n    return Color(n)\n"
    )
    tests = [
        "assert pick(1) == 1 and pick(2) > pick(1) and pick(2) + 1 == 3",
        "assert pick(1).name == 'RED' and pick(1) is pick(1) and pick(1) == Color.RED",
        "assert [1, 2][pick(1)] == 2 and sorted([pick(2), pick(1)]) == [1, 2]",
    ]
    result = run(bwrap_pool, solution, tests)
    assert result.status == Status.PASSED, explain(result)


DATACLASS = """from dataclasses import dataclass, field


@dataclass
class Point:
    x: int
    y: int
    note: str = field(default="", compare=False)

    def moved(self, dx):
        return Point(self.x + dx, self.y, "moved")


def origin():
    return Point(0, 0)
"""


def test_instances_of_the_candidates_dataclasses_compare_by_their_fields(bwrap_pool):
    tests = [
        "assert origin().moved(2) == Point(2, 0)",
        "assert origin() != Point(0, 1) and origin().moved(1).x == 1",
        "assert [origin(), origin().moved(1)] == [Point(0, 0), Point(1, 0)]",
        "assert origin().moved(3).note == 'moved'",
    ]
    result = run(bwrap_pool, DATACLASS, tests)
    assert result.status == Status.PASSED, explain(result)
    wrong = run(bwrap_pool, DATACLASS.replace("self.x + dx", "self.x - dx"), tests)
    assert wrong.status == Status.FAILED


def test_a_dataclass_whose_eq_says_true_is_compared_by_its_fields_not_its_eq(bwrap_pool):
    rigged = DATACLASS.replace('    note: str = field(default="", compare=False)\n',
                               '    note: str = field(default="", compare=False)\n\n'
                               "    def __eq__(self, other):\n        return True\n")  # fmt: skip
    rigged = rigged.replace("return Point(0, 0)", "return Point(5, 5)")
    result = run(bwrap_pool, rigged, ["assert origin() == Point(0, 0)", "assert [origin()] == [Point(0, 0)]"])
    assert result.status == Status.FAILED
    assert [t.outcome for t in result.tests] == ["failed", "failed"], explain(result)


def test_a_function_of_the_standard_library_a_candidate_returns_runs_in_its_own_process(bwrap_pool):
    """os.getpid is no name the judge takes: the candidate's answer stays a handle, and
    calling it asks the solution's process (its pid, not the judge's)."""
    solution = "import os\n\ndef getter():\n    return os.getpid\n\ndef pid():\n    return os.getpid()\n"
    result = run(bwrap_pool, solution, ["assert getter()() == pid()", "import os\nassert getter()() != os.getpid()"])
    assert result.status == Status.PASSED, explain(result)


def test_a_dangerous_function_a_candidate_returns_never_runs_in_the_judge(bwrap_pool):
    """A candidate handing back `exec` for a test to call with its own source would run
    that source in the judge; it stays a handle, so it runs in the candidate's process."""
    solution = (
        "import builtins\n\ndef runner():\n    return builtins.exec\n\n"
        'def payload():\n    return "import builtins; builtins.AssertionError = KeyError; PWNED = 1"\n'
    )
    tests = ["runner()(payload())\nassert False, 'the assertion must still fail'"]
    result = run(bwrap_pool, solution, tests)
    assert result.status == Status.FAILED and result.tests[0].message.startswith("assertion failed"), explain(result)


def test_a_hostile_peer_sending_a_malformed_value_fails_the_test_not_the_sandbox(bwrap_pool):
    forged = (
        "import os, struct, json\nfrom harness import protocol\n_send = protocol.send\n\n"
        "def answer(x):\n    return 1\n\n"
        "def _forge(fd, message):\n    if isinstance(message, dict) and 'value' in message:\n"
        "        message = {'id': message.get('id'), 'value': {'$namedtuple': ['1bad', ['x'], [1]]}}\n"
        "    _send(fd, message)\n\nprotocol.send = _forge\n"
    )
    result = run(bwrap_pool, forged, ["assert answer(1) == 1"])
    assert result.status == Status.FAILED and "malformed" in result.tests[0].message, explain(result)


def test_a_type_name_the_judge_refuses_without_a_handle_is_a_malformed_answer(bwrap_pool):
    forged = (
        "from harness import protocol\n_send = protocol.send\n\n"
        "def answer(x):\n    return 1\n\n"
        "def _forge(fd, message):\n    if isinstance(message, dict) and 'value' in message:\n"
        "        message = {'id': message.get('id'), 'value': {'$ref': ['posix', 'system']}}\n"
        "    _send(fd, message)\n\nprotocol.send = _forge\n"
    )
    result = run(bwrap_pool, forged, ["f = answer(1)\nf('touch /scratch/pwned')\nassert 0"])
    assert result.status == Status.FAILED and "malformed" in result.tests[0].message, explain(result)


def test_a_huge_answer_is_judged_not_a_sandbox_error(bwrap_pool):
    solution = "def big(n):\n    return [[i] * 10 for i in range(n)]\n\ndef deep(n):\n    v = []\n"
    solution += "    for _ in range(n):\n        v = [v]\n    return v\n"
    tests = ["assert len(big(100_000)) == 100_000", "d = deep(20_000)\nassert d != []", "assert big(3) == [[0] * 10]"]
    result = run(bwrap_pool, solution, tests)
    assert [t.outcome for t in sorted(result.tests, key=lambda t: t.name)] == ["passed", "passed", "failed"], explain(
        result
    )
