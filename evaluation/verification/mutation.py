"""AST mutation engine for Python reference solutions.

A mutant is the reference with exactly one small change (a flipped comparison, a
dropped statement, ...). A test suite that still passes on a mutant cannot tell
that change from the reference, so mutants measure how much a task's tests pin
down. Mutants are spliced into the reference text where possible, so a curator's
diff shows the one changed line, not a reformatted file.
"""

from __future__ import annotations

import ast
import copy
import difflib
import hashlib
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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

Step = tuple[str, int | None]  # (field, index in that field's list, or None for a single node)
Replacement = ast.AST | list[ast.stmt]  # a list stands in for one statement of a body; empty deletes it
Transform = Callable[[ast.AST], Replacement]  # gets a private copy of its target
Edit = tuple[tuple[Step, ...], str, Transform]  # (path below the visited node, summary, transform)


@dataclass(frozen=True)
class Mutant:
    family: str
    description: str
    line: int
    source: str
    digest: str

    def diff(self, reference: str) -> str:
        """Unified diff from the reference source to this mutant."""
        lines = difflib.unified_diff(
            _lines(reference), _lines(self.source), fromfile="reference.py", tofile="mutant.py"
        )
        return "".join(lines)


@dataclass(frozen=True)
class _Site:
    family: str
    path: tuple[Step, ...]
    line: int
    description: str
    transform: Transform


def generate_mutants(
    source: str, *, seed: int = 0, limit: int = 30, families: tuple[str, ...] = FAMILIES
) -> list[Mutant]:
    """Up to `limit` distinct, compiling single-change mutants of `source`.

    1. Collect every mutation site of the requested families.
    2. Shuffle the family order and each family's sites with `random.Random(seed)`.
    3. Take families in turns, building a family's next site until one yields a
       mutant that compiles, differs from the reference and repeats no earlier pick,
       so a small limit still spreads over many families.
    """
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown mutation families: {', '.join(unknown)}")
    tree = _parse(source)
    builder = _Builder(source, tree)
    order = list(dict.fromkeys(families))
    sites: dict[str, list[_Site]] = {family: [] for family in order}
    for site in _collect_sites(tree, order):
        sites[site.family].append(site)
    rng = random.Random(seed)  # noqa: S311 - reproducible selection, not cryptography
    rng.shuffle(order)
    for family in order:
        rng.shuffle(sites[family])
    return _round_robin(order, {family: iter(sites[family]) for family in order}, builder, limit)


def _round_robin(order: list[str], queues: dict[str, Iterator[_Site]], builder: _Builder, limit: int) -> list[Mutant]:
    chosen: list[Mutant] = []
    seen = {builder.original_digest}
    active = list(order)
    while active and len(chosen) < limit:
        for family in list(active):
            mutant = _next_new(queues[family], builder, seen)
            if mutant is None:
                active.remove(family)
                continue
            seen.add(mutant.digest)
            chosen.append(mutant)
            if len(chosen) == limit:
                break
    return chosen


def _next_new(queue: Iterator[_Site], builder: _Builder, seen: set[str]) -> Mutant | None:
    for site in queue:
        mutant = builder.build(site)
        if mutant is not None and mutant.digest not in seen:
            return mutant
    return None


def _parse(source: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are the reference's business
            return ast.parse(source)
    except SyntaxError as err:
        raise ValueError(f"source does not parse: {err.msg} (line {err.lineno}, column {err.offset})") from err
    except ValueError as err:  # null bytes are a ValueError on 3.11
        raise ValueError(f"source does not parse: {err}") from err


def _lines(text: str) -> list[str]:
    # difflib glues a last line without a newline onto the next hunk line.
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(keepends=True)]


def _short(node: ast.AST, width: int = 40) -> str:
    text = (ast.unparse(node).splitlines() or [""])[0]
    return text if len(text) <= width else text[: width - 3] + "..."


# --- walking the tree -------------------------------------------------------------------------------------------

# Annotations and decorators are not behaviour a test suite is asked to pin down.
_SKIPPED_FIELDS = frozenset({"annotation", "returns", "type_comment", "decorator_list", "type_ignores"})
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _collect_sites(tree: ast.Module, families: list[str]) -> Iterator[_Site]:
    rules = [(family, _RULES[family]) for family in FAMILIES if family in families]
    for path, node in _walk(tree, ()):
        for family, rule in rules:
            for suffix, summary, transform in rule(node):
                target = _locate(node, suffix)
                line = getattr(target, "lineno", None) or getattr(node, "lineno", 1)
                yield _Site(family, path + suffix, line, f"line {line}: {summary}", transform)


def _walk(node: ast.AST, path: tuple[Step, ...]) -> Iterator[tuple[tuple[Step, ...], ast.AST]]:
    yield path, node
    for step, child in _children(node):
        if _is_docstring(node, step, child) or _is_main_guard(child):
            continue
        if isinstance(node, ast.JoinedStr) and isinstance(child, ast.Constant):
            continue  # literal text of an f-string: emptying it only garbles output
        yield from _walk(child, (*path, step))


def _children(node: ast.AST) -> Iterator[tuple[Step, ast.AST]]:
    for field, value in ast.iter_fields(node):
        if field in _SKIPPED_FIELDS:
            continue
        if isinstance(value, ast.AST):
            yield (field, None), value
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield (field, index), item


def _is_docstring(parent: ast.AST, step: Step, child: ast.AST) -> bool:
    return (
        isinstance(parent, _SCOPES)
        and step == ("body", 0)
        and isinstance(child, ast.Expr)
        and isinstance(child.value, ast.Constant)
        and isinstance(child.value.value, str)
    )


def _is_main_guard(node: ast.AST) -> bool:
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    has_name = any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
    has_main = any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
    return isinstance(node.test.ops[0], ast.Eq) and has_name and has_main


def _locate(node: ast.AST, path: tuple[Step, ...]) -> ast.AST:
    for field, index in path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    return node


def _put(parent: ast.AST, step: Step, value: Replacement, replaced: int = 1) -> None:
    """Put value in the place of `replaced` items at step."""
    field, index = step
    if index is None:
        setattr(parent, field, value)
    else:
        getattr(parent, field)[index : index + replaced] = value if isinstance(value, list) else [value]


# --- building one mutant ----------------------------------------------------------------------------------------


def _digest(dump: str) -> str:
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()


class _Builder:
    """Applies one site to the reference and checks the result."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.tree = tree
        self.original_digest = _digest(ast.dump(ast.parse(ast.unparse(tree))))
        self.raw = source.encode("utf-8")
        # ast columns count UTF-8 bytes, so the splice works on bytes; bytes.splitlines breaks where Python does.
        self.starts = [0]
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def build(self, site: _Site) -> Mutant | None:
        parent = _locate(self.tree, site.path[:-1])
        target = _locate(parent, site.path[-1:])
        replacement = site.transform(copy.deepcopy(target))
        try:
            text = self._unparse_with(parent, site.path[-1], target, replacement)
            dump = ast.dump(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            return None
        digest = _digest(dump)
        if digest == self.original_digest:
            return None
        text = self._splice(target, replacement, dump) or text + "\n"
        if not _compiles(text):
            return None
        return Mutant(site.family, site.description, site.line, text, digest)

    def _unparse_with(self, parent: ast.AST, step: Step, target: ast.AST, replacement: Replacement) -> str:
        # Swapping the one node in and out costs far less than a deep copy of the module per mutant.
        _put(parent, step, replacement)
        try:
            return ast.unparse(self.tree)
        finally:
            _put(parent, step, target, len(replacement) if isinstance(replacement, list) else 1)

    def _splice(self, target: ast.AST, replacement: Replacement, dump: str) -> str | None:
        """The reference text with only the target's span rewritten, if that parses to the mutant."""
        if getattr(target, "end_lineno", None) is None:
            return None
        start = self.starts[target.lineno - 1] + target.col_offset
        end = self.starts[target.end_lineno - 1] + target.end_col_offset
        for piece, start_at, end_at in self._pieces(target, replacement, start, end):
            text = (self.raw[:start_at] + piece + self.raw[end_at:]).decode("utf-8", errors="replace")
            try:
                if ast.dump(ast.parse(text)) == dump:
                    return text
            except (SyntaxError, ValueError):
                continue
        return None

    def _pieces(
        self, target: ast.AST, replacement: Replacement, start: int, end: int
    ) -> Iterator[tuple[bytes, int, int]]:
        if isinstance(replacement, list):
            # A deleted statement goes with its whole lines; a dropped `elif` with its header and body,
            # leaving the rest of the chain in place.
            last = target.body[-1].end_lineno if replacement else target.end_lineno
            yield b"", self.starts[target.lineno - 1], self.starts[last]
            yield b"", start, end
            return
        line_start = self.starts[target.lineno - 1]
        indent = self.raw[line_start:start]
        text = ast.unparse(replacement).encode("utf-8")
        if isinstance(target, ast.stmt):
            text = text.replace(b"\n", b"\n" + indent if indent.isspace() else b"\n")
            if isinstance(target, ast.If) and self.raw[start:].startswith(b"elif"):
                text = b"el" + text
        yield text, start, end
        yield b"(" + text + b")", start, end


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning must not become an error under -W error
            compile(text, "mutant.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


# --- the families -----------------------------------------------------------------------------------------------
# Each rule looks at one node and yields the edits it offers there. Swaps aim at the mistakes people make:
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
                yield (), f"`{_SYMBOLS[type(op)]}` changed to `{_SYMBOLS[new]}`", _set_compare_op(index, new)


def _arithmetic(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BinOp | ast.AugAssign):
        equals = "=" if isinstance(node, ast.AugAssign) else ""
        old = _SYMBOLS.get(type(node.op), "")
        for new in _ARITHMETIC_SWAPS.get(type(node.op), ()):
            yield (), f"`{old}{equals}` changed to `{_SYMBOLS[new]}{equals}`", _set_field("op", new)


def _boolean(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BoolOp):
        old, new = (ast.And, ast.Or) if isinstance(node.op, ast.And) else (ast.Or, ast.And)
        yield (), f"`{_SYMBOLS[old]}` changed to `{_SYMBOLS[new]}`", _set_field("op", new)
        for index, value in enumerate(node.values):
            yield (), f"operand `{_short(value)}` of `{_SYMBOLS[old]}` dropped", _drop_operand(index)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield (), f"`not` removed from `{_short(node)}`", _unwrap


def _unary(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
        yield (), f"`{_SYMBOLS[type(node.op)]}` removed from `{_short(node)}`", _unwrap
    if isinstance(node, ast.BinOp) and isinstance(node.op, _NUMERIC_OPS):
        for field in ("left", "right"):
            operand = getattr(node, field)
            if isinstance(operand, ast.Name):
                yield ((field, None),), f"`{operand.id}` negated to `-{operand.id}`", _wrap(ast.USub)
    for step, condition in _conditions(node):
        if not (isinstance(condition, ast.UnaryOp) and isinstance(condition.op, ast.Not)):
            yield (step,), f"`not` inserted before `{_short(condition)}`", _wrap(ast.Not)


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
        yield (), f"`{value}` changed to `{not value}`", _replace_with(lambda: ast.Constant(not value))
    elif isinstance(value, int):
        for new in dict.fromkeys((value + 1, value - 1, 0)):
            if new != value:
                yield (), f"constant `{value}` changed to `{new}`", _replace_with(lambda new=new: _int_node(new))
    elif isinstance(value, str) and value:
        yield (), f"string {_short(node)} changed to ''", _replace_with(lambda: ast.Constant(""))


def _off_by_one(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        for index, arg in enumerate(node.args):
            if not isinstance(arg, ast.Starred):
                for delta in (1, -1):
                    shifted = _short(_shifted(arg, delta))
                    yield (("args", index),), f"`range` bound `{_short(arg)}` changed to `{shifted}`", _shift(delta)
    elif isinstance(node, ast.Subscript) and _is_index(node.slice):
        for delta in (1, -1):
            shifted = _short(_shifted(node.slice, delta))
            yield (("slice", None),), f"index `{_short(node.slice)}` changed to `{shifted}`", _shift(delta)


def _slice(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Slice):
        return
    for field in ("lower", "upper", "step"):
        bound = getattr(node, field)
        if bound is None:
            continue
        # s[0:n] and s[::1] mean the same without the bound: no mutant there.
        neutral = {"lower": 0, "step": 1}.get(field)
        if neutral is None or _int_value(bound) != neutral:
            yield _slice_edit(node, field, None)
        if field != "step":
            yield _slice_edit(node, field, 1)
            yield _slice_edit(node, field, -1)


def _slice_edit(node: ast.Slice, field: str, delta: int | None) -> Edit:
    transform = _set_bound(field, delta)
    return (), f"slice `{_short(node)}` changed to `{_short(transform(copy.deepcopy(node)))}`", transform


def _return_value(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Return) or node.value is None:
        return
    value, here, shown = node.value, (("value", None),), f"`return {_short(node.value)}`"
    if not (isinstance(value, ast.Constant) and value.value is None):
        yield here, f"{shown} now returns `None`", _replace_with(lambda: ast.Constant(None))
    if _looks_boolean(value) and not isinstance(value, ast.Constant):
        yield here, f"{shown} now returns its negation", _negate
    neutral = _neutral_for(value)
    if neutral is not None:
        yield here, f"{shown} now returns `{neutral}`", _replace_with(lambda: ast.parse(neutral, mode="eval").body)


def _remove_statement(node: ast.AST) -> Iterator[Edit]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            here = ((field, index),)
            if isinstance(node, ast.If) and field == "orelse" and len(body) == 1 and isinstance(statement, ast.If):
                yield here, f"branch `elif {_short(statement.test)}` removed", _drop_branch
            elif _removable(node, (field, index), statement):
                transform = _replace_with(ast.Pass) if len(body) == 1 else _delete
                yield here, f"statement `{_short(statement)}` removed", transform


def _removable(parent: ast.AST, step: Step, statement: ast.AST) -> bool:
    if not isinstance(statement, ast.stmt) or isinstance(statement, _KEPT_STATEMENTS):
        return False
    bare_string = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    return not (bare_string or _is_docstring(parent, step, statement) or _is_main_guard(statement))


def _swap_branches(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.If):
        yield (("test", None),), f"condition `{_short(node.test)}` negated", _negate
        if node.orelse:
            yield (), "`if` and `else` branches swapped", _swap_bodies
    elif isinstance(node, ast.IfExp):
        yield (), f"branches of `{_short(node)}` swapped", _swap_bodies


_RULES: dict[str, Callable[[ast.AST], Iterator[Edit]]] = {
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


# --- small helpers for the rules --------------------------------------------------------------------------------


def _int_value(node: ast.AST | None) -> int | None:
    """The value of an integer literal, negative ones included; None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _int_node(value: int) -> ast.expr:
    # Written as the parser writes it, so (-1) ** 2 keeps its parentheses when unparsed.
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _shifted(node: ast.expr, delta: int) -> ast.expr:
    """node + delta, folded into a literal or a trailing `+ c` / `- c` so `n - 1` becomes `n`, not `n - 1 + 1`."""
    value = _int_value(node)
    if value is not None:
        return _int_node(value + delta)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and _int_value(node.right) is not None:
        offset = _int_value(node.right) * (1 if isinstance(node.op, ast.Add) else -1) + delta
        base = node.left
    else:
        offset, base = delta, node
    if offset == 0:
        return base
    return ast.BinOp(base, ast.Add() if offset > 0 else ast.Sub(), ast.Constant(abs(offset)))


def _is_index(node: ast.expr) -> bool:
    if isinstance(node, ast.Slice | ast.Tuple):
        return False
    return not isinstance(node, ast.Constant) or _int_value(node) is not None


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
        return "0" if _int_value(node) not in (None, 0) else None
    if isinstance(node, ast.Call):
        return _NEUTRAL_BY_CALL.get(_call_name(node))
    return _NEUTRAL_BY_NODE.get(type(node))


def _call_name(node: ast.Call) -> str:
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else ""


# Transforms receive a private copy of their target and return what takes its place.


def _set_compare_op(index: int, op: type) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        node.ops[index] = op()
        return node

    return apply


def _set_field(field: str, make: Callable[[], ast.AST]) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        setattr(node, field, make())
        return node

    return apply


def _set_bound(field: str, delta: int | None) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        bound = getattr(node, field)
        setattr(node, field, None if delta is None else _shifted(bound, delta))
        return node

    return apply


def _replace_with(make: Callable[[], ast.AST]) -> Transform:
    return lambda _node: make()


def _wrap(op: type) -> Transform:
    return lambda node: ast.UnaryOp(op(), node)


def _shift(delta: int) -> Transform:
    return lambda node: _shifted(node, delta)


def _drop_operand(index: int) -> Transform:
    def apply(node: ast.AST) -> ast.AST:
        del node.values[index]
        return node.values[0] if len(node.values) == 1 else node

    return apply


def _unwrap(node: ast.AST) -> ast.AST:
    return node.operand


def _negate(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    return ast.UnaryOp(ast.Not(), node)


def _swap_bodies(node: ast.AST) -> ast.AST:
    node.body, node.orelse = node.orelse, node.body
    return node


def _delete(_node: ast.AST) -> list[ast.stmt]:
    return []


def _drop_branch(node: ast.AST) -> list[ast.stmt]:
    return node.orelse
