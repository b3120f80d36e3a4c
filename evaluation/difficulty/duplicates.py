"""Near-duplicate tasks: TF-IDF over statements and over normalised reference code,
and identical test suites by hash.

Two tasks are near-duplicates when the cosine similarity of their statements'
TF-IDF vectors (character 4-6 grams within words, sublinear term frequency:
robust to inflections and reordering, where whole words lose a paraphrase
that swaps a few of them) or of their normalised reference code (token 1-3
grams) reaches its threshold. Code is normalised before it is compared, so that a copy with its
variables renamed, its docstring rewritten or its comments changed still
matches: comments and docstrings go, every name the code binds itself
(functions, parameters, locals) becomes v0, v1, ... in order of first
appearance, and the source is printed back from its syntax tree. Names it
does not bind (builtins, imported modules, attributes) stay: `sorted` and
`len` say what the code does.

Identical test suites (setup, visible and hidden tests, whitespace-normalised)
are caught by hash whatever the statements say.

Pure computation over plain records: the service (services/duplicates.py)
reads the catalogue and writes the flags; bench/duplicates.py measures
precision and recall on planted copies.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported where a search runs, not by every process that imports the thresholds
    from sklearn.feature_extraction.text import TfidfVectorizer

# Chosen on HumanEval with planted copies (duplicates_audit.py, docs/difficulty.md):
# statements at 0.5 find 9 paraphrases in 10, code at 0.9 every renamed copy.
STATEMENT_THRESHOLD = 0.5
CODE_THRESHOLD = 0.9


@dataclass(frozen=True)
class Item:
    """One task as the detector sees it."""

    key: str
    statement: str
    code: str
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    statement_similarity: float
    code_similarity: float
    identical_tests: bool
    reasons: tuple[str, ...] = field(default=())


class _Bindings(ast.NodeVisitor):
    """The names the code binds itself, in source order: defined functions and
    classes, parameters, assigned names (loop and comprehension targets too)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _bind(self, name: str) -> None:
        self.names.setdefault(name, f"v{len(self.names)}")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._bind(node.arg)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._bind(node.id)


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.name = self.names.get(node.name, node.name)
        node.returns = None
        _drop_docstring(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.names.get(node.name, node.name)
        _drop_docstring(node)
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.names.get(node.arg, node.arg)
        node.annotation = None
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.names.get(node.id, node.id)
        return node


def _drop_docstring(node: ast.AST) -> None:
    body = getattr(node, "body", None)
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        node.body = body[1:] or [ast.Pass()]


def bound_names(tree: ast.AST) -> list[str]:
    """The names a syntax tree binds itself, in source order."""
    bindings = _Bindings()
    bindings.visit(tree)
    return list(bindings.names)


def rename(tree: ast.AST, names: dict[str, str]) -> ast.AST:
    """`tree` with `names` renamed wherever they appear, docstrings and annotations dropped."""
    _drop_docstring(tree)
    return _Renamer(names).visit(tree)


def normalise_code(source: str) -> str:
    """The code with comments and docstrings gone and its own names renamed in order
    of first appearance; the text as it is when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    tree = rename(tree, {name: f"v{n}" for n, name in enumerate(bound_names(tree))})
    try:
        return ast.unparse(tree)
    except (ValueError, RecursionError):
        return source


def code_tokens(source: str) -> list[str]:
    """Python tokens of the (normalised) code: names, operators, numbers, strings."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source.split()


def suite_digest(tests: Sequence[str]) -> str:
    """SHA-256 of the tests with each one's whitespace collapsed: a reformatted copy has the same digest."""
    normal = [" ".join(t.split()) for t in tests if t and t.strip()]
    return hashlib.sha256(json.dumps(sorted(normal)).encode()).hexdigest()


def _vectors(texts: list[str], vectorizer: TfidfVectorizer) -> Any:
    """L2-normalised TF-IDF rows (sparse), or None when there is nothing to compare."""
    if len(texts) < 2 or not any(t.strip() for t in texts):
        return None
    try:
        return vectorizer.fit_transform(texts).astype(np.float32)
    except ValueError:  # an empty vocabulary
        return None


def _pairs_above(matrix: Any, threshold: float, block: int = 512) -> dict[tuple[int, int], float]:
    """(i, j) with i < j and cosine(i, j) >= threshold, found a block of rows at a time:
    the whole similarity matrix of 10,000 tasks would not fit in memory."""
    found: dict[tuple[int, int], float] = {}
    if matrix is None or threshold > 1.0:
        return found
    transposed = matrix.T.tocsc()
    for start in range(0, matrix.shape[0], block):
        scores = (matrix[start : start + block] @ transposed).toarray()
        rows, cols = np.nonzero(scores >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if i < c:
                found[(i, c)] = float(scores[r, c])
    return found


def _cosines(matrix: Any, firsts: list[int], seconds: list[int]) -> np.ndarray:
    """The cosine of each pair (rows are L2-normalised), all pairs in one sparse product."""
    if matrix is None or not firsts:
        return np.zeros(len(firsts))
    return np.asarray(matrix[firsts].multiply(matrix[seconds]).sum(axis=1)).ravel()


def find_duplicates(
    items: Sequence[Item],
    *,
    statement_threshold: float = STATEMENT_THRESHOLD,
    code_threshold: float = CODE_THRESHOLD,
    normalise: bool = True,
) -> list[Pair]:
    """Every pair of items that is a near-duplicate, with its similarities and why.
    `normalise=False` compares the code as written (the benchmark's baseline)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if len({item.key for item in items}) != len(items):
        raise ValueError("item keys must be unique")
    statements = _vectors(
        [item.statement for item in items],
        TfidfVectorizer(analyzer="char_wb", ngram_range=(4, 6), sublinear_tf=True),
    )
    code = _vectors(
        [" ".join(code_tokens(normalise_code(item.code) if normalise else item.code)) for item in items],
        TfidfVectorizer(ngram_range=(1, 3), sublinear_tf=True, token_pattern=r"\S+", lowercase=False),  # noqa: S106 - a regex
    )
    by_statement = _pairs_above(statements, statement_threshold)
    by_code = _pairs_above(code, code_threshold)
    by_tests: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if item.tests:
            by_tests.setdefault(suite_digest(item.tests), []).append(index)
    same_tests = {(a, b) for group in by_tests.values() for n, a in enumerate(group) for b in group[n + 1 :]}
    found = sorted(set(by_statement) | set(by_code) | same_tests)
    firsts, seconds = [i for i, _ in found], [j for _, j in found]
    statement_scores, code_scores = _cosines(statements, firsts, seconds), _cosines(code, firsts, seconds)
    pairs = []
    for n, (i, j) in enumerate(found):
        channels = (("statement", by_statement), ("reference code", by_code))
        reasons = [name for name, hits in channels if (i, j) in hits]
        if (i, j) in same_tests:
            reasons.append("identical tests")
        pairs.append(Pair(items[i].key, items[j].key, round(float(statement_scores[n]), 4),
                          round(float(code_scores[n]), 4), (i, j) in same_tests, tuple(reasons)))  # fmt: skip
    return pairs
