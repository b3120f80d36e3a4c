"""Transforms: what a change does to its target. Each receives a private copy of the
target node and returns what takes its place (a node, or a list of statements for a
body: empty deletes the statement).

Also the integer arithmetic on literals the off-by-one and slice changes share.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluation.verification.mutants.sites import Transform


def int_value(node: ast.AST | None) -> int | None:
    """The value of an integer literal, negative ones included; None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_value(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def int_node(value: int) -> ast.expr:
    # Written as the parser writes it, so (-1) ** 2 keeps its parentheses when unparsed.
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def shifted(node: ast.expr, delta: int) -> ast.expr:
    """node + delta, folded into a literal or a trailing `+ c` / `- c` so `n - 1` becomes `n`, not `n - 1 + 1`."""
    value = int_value(node)
    if value is not None:
        return int_node(value + delta)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and int_value(node.right) is not None:
        offset = int_value(node.right) * (1 if isinstance(node.op, ast.Add) else -1) + delta
        base = node.left
    else:
        offset, base = delta, node
    if offset == 0:
        return base
    return ast.BinOp(base, ast.Add() if offset > 0 else ast.Sub(), ast.Constant(abs(offset)))


def set_compare_op(index: int, op: type) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        node.ops[index] = op()
        return node

    return apply


def set_field(field: str, make: Callable[[], ast.AST]) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        setattr(node, field, make())
        return node

    return apply


def set_bound(field: str, delta: int | None) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        bound = getattr(node, field)
        setattr(node, field, None if delta is None else shifted(bound, delta))
        return node

    return apply


def replace_with(make: Callable[[], ast.AST]) -> Transform:
    return lambda _node: make()


def wrap(op: type) -> Transform:
    return lambda node: ast.UnaryOp(op(), node)


def shift(delta: int) -> Transform:
    return lambda node: shifted(node, delta)


def drop_operand(index: int) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        del node.values[index]
        return node.values[0] if len(node.values) == 1 else node

    return apply


def unwrap(node: ast.AST) -> ast.AST:
    return node.operand


def negate(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    return ast.UnaryOp(ast.Not(), node)


def swap_bodies(node: ast.AST) -> ast.AST:
    node.body, node.orelse = node.orelse, node.body
    return node


def delete(_node: ast.AST) -> list[ast.stmt]:
    return []


def drop_branch(node: ast.AST) -> list[ast.stmt]:
    return node.orelse
