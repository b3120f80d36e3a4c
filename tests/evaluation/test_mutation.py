"""The mutation engine: one compiling change per mutant, every family, reproducible picks."""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from functools import lru_cache

import pytest

from evaluation.verification.mutants import FAMILIES, Mutant, generate_mutants
from tasks_app.datasets import humaneval_path

DATASET = humaneval_path()

# A reference with a site for every family, a docstring per scope and a main guard.
RICH = '''"""Scoring helpers."""
import math


def score(values, limit=10):
    """Sum the small values, twice over."""
    total = 0
    for i in range(len(values) - 1):  # the last value is a checksum
        value = values[i]
        if value < limit and not value == 3:
            total += value * 2
        else:
            total -= -value
    while total > 100:
        total //= 2
    head = values[1:limit:2]
    label = "big" if total else "small"
    return total % 7 == 0 or bool(head)


class Shape:
    """A square."""

    def area(self, side):
        return side ** 2 + math.pi * 0


if __name__ == "__main__":
    print(score([1, 2, 3]))
'''


def all_mutants(source: str, **options: object) -> list[Mutant]:
    return generate_mutants(source, limit=10_000, **options)


def changed_lines(mutant: Mutant, reference: str) -> list[str]:
    diff = mutant.diff(reference).splitlines()[2:]
    return [line for line in diff if line[:1] in "+-"]


@lru_cache(maxsize=1)
def humaneval_references() -> tuple[str, ...]:
    with gzip.open(DATASET, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return tuple(row["prompt"] + row["canonical_solution"] for row in rows)


def test_there_are_at_least_nine_families():
    assert len(FAMILIES) >= 9
    assert len(set(FAMILIES)) == len(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_mutates_the_rich_sample(family):
    mutants = all_mutants(RICH, families=(family,))
    assert mutants
    assert {mutant.family for mutant in mutants} == {family}


@pytest.mark.parametrize(
    ("family", "reference", "expected"),
    [
        ("comparison", "def f(a, b):\n    return a < b\n", "return a <= b"),
        ("comparison", "def f(x, xs):\n    return x in xs\n", "return x not in xs"),
        ("arithmetic", "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n", "t -= x"),
        ("arithmetic", "def f(a, b):\n    return a // b\n", "return a / b"),
        ("boolean", "def f(a, b):\n    return a and b\n", "return a or b"),
        ("boolean", "def f(a):\n    return not a\n", "return a\n"),
        ("unary", "def f(x):\n    return -x\n", "return x\n"),
        ("unary", "def f(x):\n    while x > 0:\n        x -= 1\n", "while not x > 0:"),
        ("constant", "def f(x):\n    return x > 18\n", "return x > 19"),
        ("constant", "def f(x):\n    return x > 18\n", "return x > 0"),
        ("constant", "def f():\n    return True\n", "return False"),
        ("constant", "def f():\n    return 'abc'\n", "return ''"),
        ("off_by_one", "def f(n):\n    return list(range(n))\n", "range(n + 1)"),
        ("off_by_one", "def f(n):\n    return list(range(n - 1))\n", "range(n)"),
        ("off_by_one", "def f(xs, i):\n    return xs[i]\n", "xs[i - 1]"),
        ("slice", "def f(xs, n):\n    return xs[1:n]\n", "xs[:n]"),
        ("slice", "def f(xs, n):\n    return xs[1:n]\n", "xs[1:n - 1]"),
        ("slice", "def f(xs):\n    return xs[::2]\n", "xs[:]"),
        ("return_value", "def f(xs):\n    return [x for x in xs]\n", "return None"),
        ("return_value", "def f(xs):\n    return [x for x in xs]\n", "return []"),
        ("return_value", "def f(a, b):\n    return a == b\n", "return not a == b"),
        ("remove_statement", "def f(x):\n    x = abs(x)\n    return x\n", "def f(x):\n    return x\n"),
        ("remove_statement", "def f(x):\n    if x:\n        x = 1\n    return x\n", "if x:\n        pass\n"),
        (
            "swap_branches",
            "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n",
            "return 2\n    else",
        ),
        ("swap_branches", "def f(x):\n    if x:\n        return 1\n    return 2\n", "if not x:"),
        ("swap_branches", "def f(x):\n    return 1 if x else 2\n", "return 2 if x else 1"),
    ],
)
def test_a_family_makes_the_mutation_it_names(family, reference, expected):
    sources = [mutant.source for mutant in all_mutants(reference, families=(family,))]
    assert any(expected in source for source in sources), sources


def test_every_mutant_compiles_and_differs_from_the_reference():
    reference = ast.dump(ast.parse(RICH))
    mutants = all_mutants(RICH)
    assert len(mutants) > 50
    for mutant in mutants:
        compile(mutant.source, "mutant.py", "exec", dont_inherit=True)
        assert ast.dump(ast.parse(mutant.source)) != reference, mutant.description


def test_no_two_mutants_share_a_digest_and_the_digest_is_of_the_mutated_tree():
    mutants = all_mutants(RICH)
    assert len({mutant.digest for mutant in mutants}) == len(mutants)
    for mutant in mutants:
        assert mutant.digest == hashlib.sha256(ast.dump(ast.parse(mutant.source)).encode()).hexdigest()


def test_a_change_two_families_would_make_is_kept_once():
    # xs[0] -> xs[1] is both a constant and an off-by-one mutant.
    sources = [mutant.source for mutant in all_mutants("def f(xs):\n    return xs[0]\n")]
    assert sources.count("def f(xs):\n    return xs[1]\n") == 1


def test_the_same_seed_gives_the_same_mutants_in_the_same_order():
    first = generate_mutants(RICH, seed=7, limit=12)
    again = generate_mutants(RICH, seed=7, limit=12)
    assert first == again


def test_other_seeds_pick_other_mutants():
    picked = [d.digest for d in generate_mutants(RICH, seed=0, limit=12)]
    others = [[d.digest for d in generate_mutants(RICH, seed=seed, limit=12)] for seed in range(1, 6)]
    assert any(other != picked for other in others)
    assert any(set(other) != set(picked) for other in others)


def test_the_seed_also_decides_which_family_goes_first():
    firsts = {generate_mutants(RICH, seed=seed, limit=1)[0].family for seed in range(10)}
    assert len(firsts) > 1


def test_the_limit_is_respected_and_the_pick_spreads_over_families():
    mutants = generate_mutants(RICH, limit=30)
    assert len(mutants) == 30
    assert len({mutant.family for mutant in mutants}) >= 6
    few = generate_mutants(RICH, limit=len(FAMILIES))
    assert {mutant.family for mutant in few} == set(FAMILIES)
    assert generate_mutants(RICH, limit=0) == []


def test_mutants_can_be_kept_inside_given_line_ranges():
    area = next(n for n in ast.walk(ast.parse(RICH)) if isinstance(n, ast.FunctionDef) and n.name == "area")
    inside = all_mutants(RICH, within=[(area.lineno, area.end_lineno)])
    assert inside and all(area.lineno <= m.line <= area.end_lineno for m in inside)
    # Every change lands in `area`: the text outside its lines is the reference's.
    lines = RICH.splitlines(keepends=True)
    for mutant in inside:
        assert mutant.source.startswith("".join(lines[: area.lineno - 1])), mutant.description
    everywhere = all_mutants(RICH)
    assert {m.digest for m in inside} == {m.digest for m in everywhere if area.lineno <= m.line <= area.end_lineno}
    assert all_mutants(RICH, within=[]) == []


@pytest.mark.parametrize("ranges", [[(0, 3)], [(5, 4)], [(1.5, 3)], [(True, 3)], [(1, 2, 3)]])
def test_a_line_range_that_is_not_one_is_refused(ranges):
    with pytest.raises(ValueError):
        generate_mutants(RICH, within=ranges)


def test_docstrings_are_never_mutated():
    def docstrings(source: str) -> list[str | None]:
        tree = ast.parse(source)
        scopes = [tree, *(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef))]
        return [ast.get_docstring(scope, clean=False) for scope in scopes if scope.body]

    expected = docstrings(RICH)
    for mutant in all_mutants(RICH):
        assert docstrings(mutant.source)[: len(expected)] == expected, mutant.description


def test_the_main_guard_block_is_left_alone():
    guard = 'if __name__ == "__main__":\n    print(score([1, 2, 3]))\n'
    for mutant in all_mutants(RICH):
        assert mutant.source.endswith(guard), mutant.description


def test_a_mutant_keeps_the_reference_text_around_its_change():
    mutant = next(m for m in all_mutants(RICH, families=("comparison",)) if "`>` changed to `>=`" in m.description)
    assert changed_lines(mutant, RICH) == ["-    while total > 100:", "+    while total >= 100:"]
    assert "# the last value is a checksum" in mutant.source
    assert mutant.line == 14
    assert mutant.description == "line 14: `>` changed to `>=`"
    assert mutant.diff(RICH).startswith("--- reference.py\n+++ mutant.py\n@@ ")


def test_a_syntax_error_is_a_value_error_naming_the_line():
    with pytest.raises(ValueError, match=r"does not parse: .*line 3"):
        generate_mutants("def f(x):\n    y = 1\n    return (x +\n")


def test_an_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown mutation families: typo"):
        generate_mutants(RICH, families=("comparison", "typo"))


def test_a_boundary_mutant_of_is_adult_answers_differently_at_18():
    reference = "def is_adult(age):\n    return age >= 18\n"
    mutants = generate_mutants(reference, families=("comparison",))
    boundary = next(mutant for mutant in mutants if "age > 18" in mutant.source)

    def is_adult(source: str) -> object:
        namespace: dict[str, object] = {}
        exec(compile(source, "is_adult.py", "exec"), namespace)  # noqa: S102 - our own sample, not a submission
        return namespace["is_adult"]

    assert is_adult(reference)(18) is True
    assert is_adult(boundary.source)(18) is False
    assert is_adult(boundary.source)(30) is True


def test_mutants_of_twenty_humaneval_references_compile_and_differ():
    for reference in humaneval_references()[:20]:
        original = ast.dump(ast.parse(reference))
        mutants = generate_mutants(reference, seed=3)
        assert mutants
        for mutant in mutants:
            compile(mutant.source, "mutant.py", "exec", dont_inherit=True)
            assert ast.dump(ast.parse(mutant.source)) != original


def test_the_engine_covers_all_164_humaneval_references():
    references = humaneval_references()
    counts = [len(generate_mutants(reference, limit=30)) for reference in references]
    assert len(references) == 164
    assert min(counts) >= 1
    assert max(counts) <= 30
    assert sum(counts) > 164 * 15
