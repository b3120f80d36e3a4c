"""The families of changes. Each rule looks at one node and yields the edits it offers
there; a family's name is its key in `RULES`, and `FAMILIES` is their order."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from evaluation.verification.mutants.sites import Edit, Rule, Step, is_docstring, is_main_guard, short
from evaluation.verification.mutants.transforms import (
    delete,
    drop_branch,
    drop_operand,
    int_node,
    int_value,
    negate,
    replace_with,
    set_bound,
    set_compare_op,
    set_field,
    shift,
    shifted,
    swap_bodies,
    unwrap,
    wrap,
)

FAMILIES: tuple[str, ...] = (
    "comparison",
    "arithmetic",
    "boolean",
    "unary",
    "constant",
    "off_by_one",
    "slice",
    "return_value",
    "remove_statement",
    "swap_branches",
)

# Swaps aim at the mistakes people make:
# boundaries (< vs <=), inverted tests, a neighbouring operator, an off-by-one bound.

_SYMBOLS: dict[type, str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.And: "and", ast.Or: "or", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~",
}  # fmt: skip
_COMPARE_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}  # fmt: skip
_ARITHMETIC_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub, ast.Mult), ast.Sub: (ast.Add,), ast.Mult: (ast.Div, ast.Add), ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mult), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,), ast.BitXor: (ast.BitOr,),
    ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,),
}  # fmt: skip
_NUMERIC_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_BOOLEAN_CALLS = frozenset({"all", "any", "bool", "callable", "hasattr", "isinstance", "issubclass"})
_NEUTRAL_BY_NODE: dict[type, str] = {
    ast.List: "[]", ast.ListComp: "[]", ast.Tuple: "()", ast.Dict: "{}", ast.DictComp: "{}",
    ast.Set: "set()", ast.SetComp: "set()", ast.JoinedStr: "''",
}  # fmt: skip
_NEUTRAL_BY_CALL = {"len": "0", "sum": "0", "abs": "0", "int": "0", "round": "0", "sorted": "[]", "list": "[]"}
_NEUTRAL_BY_CALL |= {"str": "''", "tuple": "()", "set": "set()", "dict": "{}", "join": "''"}
# Removing these breaks the module outright (a NameError any test notices) or changes nothing.
_KEPT_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
_KEPT_STATEMENTS += (ast.Global, ast.Nonlocal, ast.Pass)


def _comparison(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            for new in _COMPARE_SWAPS[type(op)]:
                yield (), f"`{_SYMBOLS[type(op)]}` changed to `{_SYMBOLS[new]}`", set_compare_op(index, new)


def _arithmetic(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BinOp | ast.AugAssign):
        equals = "=" if isinstance(node, ast.AugAssign) else ""
        old = _SYMBOLS.get(type(node.op), "")
        for new in _ARITHMETIC_SWAPS.get(type(node.op), ()):
            yield (), f"`{old}{equals}` changed to `{_SYMBOLS[new]}{equals}`", set_field("op", new)


def _boolean(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BoolOp):
        old, new = (ast.And, ast.Or) if isinstance(node.op, ast.And) else (ast.Or, ast.And)
        yield (), f"`{_SYMBOLS[old]}` changed to `{_SYMBOLS[new]}`", set_field("op", new)
        for index, value in enumerate(node.values):
            yield (), f"operand `{short(value)}` of `{_SYMBOLS[old]}` dropped", drop_operand(index)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield (), f"`not` removed from `{short(node)}`", unwrap


def _unary(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
        yield (), f"`{_SYMBOLS[type(node.op)]}` removed from `{short(node)}`", unwrap
    if isinstance(node, ast.BinOp) and isinstance(node.op, _NUMERIC_OPS):
        for field in ("left", "right"):
            operand = getattr(node, field)
            if isinstance(operand, ast.Name):
                yield ((field, None),), f"`{operand.id}` negated to `-{operand.id}`", wrap(ast.USub)
    for step, condition in _conditions(node):
        if not (isinstance(condition, ast.UnaryOp) and isinstance(condition.op, ast.Not)):
            yield (step,), f"`not` inserted before `{short(condition)}`", wrap(ast.Not)


def _conditions(node: ast.AST) -> Iterator[tuple[Step, ast.expr]]:
    # `if` tests are left to swap_branches, which negates them.
    if isinstance(node, ast.While | ast.IfExp):
        yield ("test", None), node.test
    elif isinstance(node, ast.BoolOp):
        for index, value in enumerate(node.values):
            yield ("values", index), value


def _constant(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Constant):
        return
    value = node.value
    if isinstance(value, bool):
        yield (), f"`{value}` changed to `{not value}`", replace_with(lambda: ast.Constant(not value))
    elif isinstance(value, int):
        for new in dict.fromkeys((value + 1, value - 1, 0)):
            if new != value:
                yield (), f"constant `{value}` changed to `{new}`", replace_with(lambda new=new: int_node(new))
    elif isinstance(value, str) and value:
        yield (), f"string {short(node)} changed to ''", replace_with(lambda: ast.Constant(""))


def _off_by_one(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        for index, arg in enumerate(node.args):
            if not isinstance(arg, ast.Starred):
                for delta in (1, -1):
                    moved = short(shifted(arg, delta))
                    yield (("args", index),), f"`range` bound `{short(arg)}` changed to `{moved}`", shift(delta)
    elif isinstance(node, ast.Subscript) and _is_index(node.slice):
        for delta in (1, -1):
            moved = short(shifted(node.slice, delta))
            yield (("slice", None),), f"index `{short(node.slice)}` changed to `{moved}`", shift(delta)


def _slice(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Slice):
        return
    for field in ("lower", "upper", "step"):
        bound = getattr(node, field)
        if bound is None:
            continue
        # s[0:n] and s[::1] mean the same without the bound: no mutant there.
        neutral = {"lower": 0, "step": 1}.get(field)
        if neutral is None or int_value(bound) != neutral:
            yield _slice_edit(node, field, None)
        if field != "step":
            yield _slice_edit(node, field, 1)
            yield _slice_edit(node, field, -1)


def _slice_edit(node: ast.Slice, field: str, delta: int | None) -> Edit:
    transform = set_bound(field, delta)
    return (), f"slice `{short(node)}` changed to `{short(transform(copy.deepcopy(node)))}`", transform


def _return_value(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Return) or node.value is None:
        return
    value, here, shown = node.value, (("value", None),), f"`return {short(node.value)}`"
    if not (isinstance(value, ast.Constant) and value.value is None):
        yield here, f"{shown} now returns `None`", replace_with(lambda: ast.Constant(None))
    if _looks_boolean(value) and not isinstance(value, ast.Constant):
        yield here, f"{shown} now returns its negation", negate
    neutral = _neutral_for(value)
    if neutral is not None:
        yield here, f"{shown} now returns `{neutral}`", replace_with(lambda: ast.parse(neutral, mode="eval").body)


def _remove_statement(node: ast.AST) -> Iterator[Edit]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            here = ((field, index),)
            if isinstance(node, ast.If) and field == "orelse" and len(body) == 1 and isinstance(statement, ast.If):
                yield here, f"branch `elif {short(statement.test)}` removed", drop_branch
            elif _removable(node, (field, index), statement):
                transform = replace_with(ast.Pass) if len(body) == 1 else delete
                yield here, f"statement `{short(statement)}` removed", transform


def _removable(parent: ast.AST, step: Step, statement: ast.AST) -> bool:
    if not isinstance(statement, ast.stmt) or isinstance(statement, _KEPT_STATEMENTS):
        return False
    bare_string = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    return not (bare_string or is_docstring(parent, step, statement) or is_main_guard(statement))


def _swap_branches(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.If):
        yield (("test", None),), f"condition `{short(node.test)}` negated", negate
        if node.orelse:
            yield (), "`if` and `else` branches swapped", swap_bodies
    elif isinstance(node, ast.IfExp):
        yield (), f"branches of `{short(node)}` swapped", swap_bodies


RULES: dict[str, Rule] = {
    "comparison": _comparison,
    "arithmetic": _arithmetic,
    "boolean": _boolean,
    "unary": _unary,
    "constant": _constant,
    "off_by_one": _off_by_one,
    "slice": _slice,
    "return_value": _return_value,
    "remove_statement": _remove_statement,
    "swap_branches": _swap_branches,
}


# --- what the rules ask of a node -------------------------------------------------------------------------------


def _is_index(node: ast.expr) -> bool:
    if isinstance(node, ast.Slice | ast.Tuple):
        return False
    return not isinstance(node, ast.Constant) or int_value(node) is not None


def _looks_boolean(node: ast.expr) -> bool:
    if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        name = _call_name(node)
        return name in _BOOLEAN_CALLS or name.startswith("is") or name in ("startswith", "endswith")
    return False


def _neutral_for(node: ast.expr) -> str | None:
    """An empty value of the type the expression visibly has, or None when its type is not plain to see."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and node.value:
            return "''"
        return "0" if int_value(node) not in (None, 0) else None
    if isinstance(node, ast.Call):
        return _NEUTRAL_BY_CALL.get(_call_name(node))
    return _NEUTRAL_BY_NODE.get(type(node))


def _call_name(node: ast.Call) -> str:
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else ""
