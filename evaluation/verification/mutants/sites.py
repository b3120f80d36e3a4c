"""Walking the reference's tree: the nodes a change may touch, and the mutation sites found there.

A site is a path from the module down to one node, plus the transform a family's
rule offers at that node. Paths, not node references, so the builder can find the
same place in the one tree it mutates in place and restores.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Step = tuple[str, int | None]  # (field, index in that field's list, or None for a single node)
Replacement = ast.AST | list[ast.stmt]  # a list stands in for one statement of a body; empty deletes it
Transform = Callable[[ast.AST], Replacement]  # gets a private copy of its target
Edit = tuple[tuple[Step, ...], str, Transform]  # (path below the visited node, summary, transform)
Rule = Callable[[ast.AST], Iterator[Edit]]  # one family: the edits it offers at one node

# Annotations and decorators are not behaviour a test suite is asked to pin down.
SKIPPED_FIELDS = frozenset({"annotation", "returns", "type_comment", "decorator_list", "type_ignores"})
SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Site:
    family: str
    path: tuple[Step, ...]
    line: int
    description: str
    transform: Transform


def collect_sites(tree: ast.Module, rules: list[tuple[str, Rule]]) -> Iterator[Site]:
    """Every site the (family, rule) pairs offer, in tree order, families in the order given at each node."""
    for path, node in walk(tree, ()):
        for family, rule in rules:
            for suffix, summary, transform in rule(node):
                target = locate(node, suffix)
                line = getattr(target, "lineno", None) or getattr(node, "lineno", 1)
                yield Site(family, path + suffix, line, f"line {line}: {summary}", transform)


def walk(node: ast.AST, path: tuple[Step, ...]) -> Iterator[tuple[tuple[Step, ...], ast.AST]]:
    yield path, node
    for step, child in children(node):
        if is_docstring(node, step, child) or is_main_guard(child):
            continue
        if isinstance(node, ast.JoinedStr) and isinstance(child, ast.Constant):
            continue  # literal text of an f-string: emptying it only garbles output
        yield from walk(child, (*path, step))


def children(node: ast.AST) -> Iterator[tuple[Step, ast.AST]]:
    for field, value in ast.iter_fields(node):
        if field in SKIPPED_FIELDS:
            continue
        if isinstance(value, ast.AST):
            yield (field, None), value
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield (field, index), item


def is_docstring(parent: ast.AST, step: Step, child: ast.AST) -> bool:
    return (
        isinstance(parent, SCOPES)
        and step == ("body", 0)
        and isinstance(child, ast.Expr)
        and isinstance(child.value, ast.Constant)
        and isinstance(child.value.value, str)
    )


def is_main_guard(node: ast.AST) -> bool:
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    has_name = any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
    has_main = any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
    return isinstance(node.test.ops[0], ast.Eq) and has_name and has_main


def locate(node: ast.AST, path: tuple[Step, ...]) -> ast.AST:
    for field, index in path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    return node


def put(parent: ast.AST, step: Step, value: Replacement, replaced: int = 1) -> None:
    """Put value in the place of `replaced` items at step."""
    field, index = step
    if index is None:
        setattr(parent, field, value)
    else:
        getattr(parent, field)[index : index + replaced] = value if isinstance(value, list) else [value]


def short(node: ast.AST, width: int = 40) -> str:
    """The node's source, first line only, cut to `width`: how a description quotes it."""
    text = (ast.unparse(node).splitlines() or [""])[0]
    return text if len(text) <= width else text[: width - 3] + "..."
