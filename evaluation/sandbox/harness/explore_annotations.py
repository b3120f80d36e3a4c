"""What the entry point's annotations say about its parameters, and small values made
from that: for parameters no test passes a value for (explore_generate.Generator),
and for whole inputs where no test passes any. The reference's source is parsed,
never run, here: `signature` reads the statements scope.py parsed.

A spec is a tuple: ("int",), ("list", item), ("dict", key, value), ("tuple", [items]),
("tuple...", item), ("set", item), ("union", [specs]), ("none",); None where no value
can be made (an annotation this does not know).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 4  # nesting of a made value, here and in explore_generate's mutations
NOTHING = object()  # what an annotation no value can be made for gives


class Param:
    __slots__ = ("has_default", "keyword_only", "name", "spec")

    def __init__(self, name: str, spec: Any, has_default: bool, keyword_only: bool) -> None:
        self.name, self.spec, self.has_default, self.keyword_only = name, spec, has_default, keyword_only


_SCALARS = {"int": "int", "float": "float", "str": "str", "bool": "bool", "bytes": "bytes", "None": "none"}
_LISTS = {"list", "List", "Sequence", "Iterable", "Collection", "MutableSequence", "Iterator"}
_DICTS = {"dict", "Dict", "Mapping", "MutableMapping"}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet"}


def signature(statements: list[Any], entry: str) -> list[Param] | None:
    """The entry point's parameters with what their annotations say, from the
    reference's top-level statements (scope._statements: parsed, never run)."""
    import _ast

    for node in statements:
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)) and node.name == entry:
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            first_default = len(positional) - len(arguments.defaults)
            params = [Param(a.arg, _spec(a.annotation), i >= first_default, False) for i, a in enumerate(positional)]
            for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                params.append(Param(arg.arg, _spec(arg.annotation), default is not None, True))
            return params
    return None


def _name(node: Any) -> str | None:
    import _ast

    if isinstance(node, _ast.Name):
        return node.id
    if isinstance(node, _ast.Attribute):
        return node.attr
    return None


def _spec(node: Any) -> Any:
    """An annotation as a spec: ("int",), ("list", item), ("dict", key, value),
    ("tuple", [items]), ("tuple...", item), ("set", item), ("union", [specs]),
    ("none",); None for what no value can be made for."""
    import _ast

    if node is None:
        return None
    if isinstance(node, _ast.Constant):
        if node.value is None:
            return ("none",)
        if isinstance(node.value, str):  # a string annotation: parse it the same way
            try:
                return _spec(compile(node.value, "<annotation>", "eval", _ast.PyCF_ONLY_AST).body)
            except (SyntaxError, ValueError):
                return None
        return None
    if isinstance(node, _ast.BinOp) and isinstance(node.op, _ast.BitOr):
        return ("union", [_spec(node.left), _spec(node.right)])
    name = _name(node)
    if name is not None:
        if name in _SCALARS:
            return (_SCALARS[name],)
        if name in _LISTS:
            return ("list", ("int",))
        if name in _DICTS:
            return ("dict", ("str",), ("int",))
        if name in _SETS:
            return ("set", ("int",))
        if name in ("tuple", "Tuple"):
            return ("tuple...", ("int",))
        return None
    if isinstance(node, _ast.Subscript):
        base = _name(node.value)
        inner = node.slice
        items = list(inner.elts) if isinstance(inner, _ast.Tuple) else [inner]
        if base in _LISTS:
            return ("list", _spec(items[0]))
        if base in _SETS:
            return ("set", _spec(items[0]))
        if base in _DICTS and len(items) == 2:
            return ("dict", _spec(items[0]), _spec(items[1]))
        if base in ("tuple", "Tuple"):
            if len(items) == 2 and isinstance(items[1], _ast.Constant) and items[1].value is Ellipsis:
                return ("tuple...", _spec(items[0]))
            return ("tuple", [_spec(i) for i in items])
        if base == "Optional":
            return ("union", [_spec(items[0]), ("none",)])
        if base == "Union":
            return ("union", [_spec(i) for i in items])
    return None


def from_spec(spec: Any, rng: Any, pools: Any, depth: int = 0) -> Any:
    """A small value the spec allows, or NOTHING."""
    if spec is None or depth > MAX_DEPTH:
        return NOTHING
    kind = spec[0]
    if kind == "union":
        usable = [s for s in spec[1] if s is not None]
        return from_spec(rng.choice(usable), rng, pools, depth) if usable else NOTHING
    if kind == "none":
        return None
    if kind == "int":
        return pools.pick(rng, int, 0) if rng.random() < 0.3 else rng.randint(-20, 20)
    if kind == "float":
        return round(rng.uniform(-10.0, 10.0), rng.randint(0, 2))
    if kind == "bool":
        return rng.random() < 0.5
    if kind in ("str", "bytes"):
        text = "".join(rng.choice(pools.alphabet) for _ in range(rng.randint(0, 8)))
        return text if kind == "str" else text.encode("latin-1", "replace")
    if kind in ("list", "set", "tuple..."):
        items = [from_spec(spec[1], rng, pools, depth + 1) for _ in range(rng.randint(0, 6))]
        if any(i is NOTHING for i in items) or spec[1] is None:
            return NOTHING
        if kind == "set":
            try:
                return set(items)
            except TypeError:
                return NOTHING
        return items if kind == "list" else tuple(items)
    if kind == "tuple":
        items = [from_spec(s, rng, pools, depth + 1) for s in spec[1]]
        return NOTHING if any(i is NOTHING for i in items) else tuple(items)
    if kind == "dict":
        result = {}
        for _ in range(rng.randint(0, 4)):
            key, value = from_spec(spec[1], rng, pools, depth + 1), from_spec(spec[2], rng, pools, depth + 1)
            if key is NOTHING or value is NOTHING:
                return NOTHING
            try:
                result[key] = value
            except TypeError:
                return NOTHING
        return result
    return NOTHING
