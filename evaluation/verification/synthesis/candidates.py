"""Which files are the package and which are its tests, and the mutants of each function.

The mutation engine (verification/mutants) works on a whole module: every site it
finds is spliced into the module's own text, so a mutant's diff is the one changed
line. Here each mutant is credited to the innermost function holding its line, and
each function keeps at most `per_function` of its own, taken a family at a time so
a small cap still spreads over kinds of change. Changes outside any function
(module constants, class attributes) are not bugs a statement can point at, and
mutants the engine could only give as a reformatted module are left out: their
diff would be the whole file.
"""

from __future__ import annotations

import ast
import difflib
import random
from dataclasses import dataclass

from evaluation.verification.mutants import Mutant, generate_mutants

TEST_DIRS = frozenset({"tests", "test", "testing"})
NOT_PACKAGE_DIRS = TEST_DIRS | {"docs", "doc", "examples", "example", "scripts", "benchmarks", "bench"}
NOT_PACKAGE_FILES = frozenset({"setup.py", "conftest.py", "noxfile.py", "fabfile.py"})
MAX_MUTANTS_PER_MODULE = 5000


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def is_package_module(path: str) -> bool:
    parts = path.split("/")
    if not path.endswith(".py") or is_test_file(path) or parts[-1] in NOT_PACKAGE_FILES:
        return False
    return not any(part in NOT_PACKAGE_DIRS or part.startswith(".") for part in parts[:-1])


@dataclass(frozen=True)
class FunctionSpan:
    qualname: str  # Class.method for a method
    first: int
    last: int


@dataclass(frozen=True)
class Candidate:
    path: str
    function: str
    mutant: Mutant


def functions_of(tree: ast.Module) -> list[FunctionSpan]:
    spans: list[FunctionSpan] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                spans.append(FunctionSpan(name, child.lineno, child.end_lineno or child.lineno))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return spans


def innermost(spans: list[FunctionSpan], line: int) -> FunctionSpan | None:
    holding = [span for span in spans if span.first <= line <= span.last]
    return min(holding, key=lambda span: span.last - span.first) if holding else None


def one_hunk(original: str, mutated: str) -> bool:
    """Whether the mutant changes one place: a spliced mutant, not a reformatted module."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), mutated.splitlines(), autojunk=False)
    return sum(1 for tag, *_ in matcher.get_opcodes() if tag != "equal") == 1


def module_candidates(path: str, source: str, *, per_function: int, seed: int) -> tuple[int, list[Candidate]]:
    """(functions in the module, the mutants chosen for them)."""
    try:
        tree = ast.parse(source)
        mutants = generate_mutants(source, seed=seed, limit=MAX_MUTANTS_PER_MODULE)
    except (SyntaxError, ValueError):
        return 0, []  # a module that does not parse (a template, Python 2) has nothing to offer
    spans = functions_of(tree)
    by_function: dict[str, list[Mutant]] = {span.qualname: [] for span in spans}
    for mutant in mutants:
        span = innermost(spans, mutant.line)
        if span is not None and one_hunk(source, mutant.source):
            by_function[span.qualname].append(mutant)
    rng = random.Random(f"{seed}:{path}")  # noqa: S311 - reproducible selection, not cryptography
    chosen: list[Candidate] = []
    for span in spans:
        picks = _spread(by_function[span.qualname], per_function, rng)
        chosen.extend(Candidate(path, span.qualname, mutant) for mutant in picks)
    return len(spans), chosen


def _spread(mutants: list[Mutant], limit: int, rng: random.Random) -> list[Mutant]:
    """Up to `limit` mutants, families taken in turns in a seeded order."""
    families: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        families.setdefault(mutant.family, []).append(mutant)
    order = sorted(families)
    rng.shuffle(order)
    for family in order:
        rng.shuffle(families[family])
    picked: list[Mutant] = []
    while len(picked) < limit and any(families[f] for f in order):
        for family in order:
            if families[family] and len(picked) < limit:
                picked.append(families[family].pop())
    return picked


def interleave(candidates: list[Candidate]) -> list[Candidate]:
    """First mutant of every function, then the second of each, ...: a task cap then
    spreads over the functions instead of exhausting the first module."""
    queues: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in candidates:
        queues.setdefault((candidate.path, candidate.function), []).append(candidate)
    ordered: list[Candidate] = []
    depth = 0
    while len(ordered) < len(candidates):
        for queue in queues.values():
            if depth < len(queue):
                ordered.append(queue[depth])
        depth += 1
    return ordered
