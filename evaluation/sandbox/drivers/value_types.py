"""The value types of a function's signature, and the token stream its arguments go in.

A type is parsed into a tree: `("int",)`, `("list", ("str",))`. The signatures here come
from a saved task version, validated on the way in (tasks_app/function_signatures.py),
so a type that does not parse is a bug of ours and raises ValueError.
"""

from __future__ import annotations

from typing import Any

MARKER = "@@tp-result@@"
SCALARS = ("int", "float", "bool", "str")

Type = tuple[Any, ...]


def parse_type(text: str) -> Type:
    text = text.replace(" ", "")
    if text in SCALARS:
        return (text,)
    if text.startswith("list[") and text.endswith("]"):
        return ("list", parse_type(text[5:-1]))
    raise ValueError(f"not a value type: {text!r}")


def mangle(kind: Type) -> str:
    """A name for the type, usable in identifiers: `L_L_int` for list[list[int]]."""
    return kind[0] if kind[0] != "list" else f"L_{mangle(kind[1])}"


def subtypes(kinds: list[Type]) -> list[Type]:
    """Every type the given ones are built of, innermost first, each once."""
    seen: list[Type] = []

    def visit(kind: Type) -> None:
        if kind[0] == "list":
            visit(kind[1])
        if kind not in seen:
            seen.append(kind)

    for kind in kinds:
        visit(kind)
    return seen


def param_types(signature: dict[str, Any]) -> list[Type]:
    return [parse_type(param["type"]) for param in signature.get("params") or ()]


def return_type(signature: dict[str, Any]) -> Type:
    return parse_type(signature["returns"])


def encode_value(kind: Type, value: Any, out: list[str]) -> None:
    name = kind[0]
    if name == "int":
        out.append(str(int(value)))
    elif name == "float":
        out.append(repr(float(value)))
    elif name == "bool":
        out.append("1" if value else "0")
    elif name == "str":
        out.append("s" + str(value).encode("utf-8").hex())
    else:
        out.append(str(len(value)))
        for item in value:
            encode_value(kind[1], item, out)


def encode_args(signature: dict[str, Any], args: list[Any]) -> str:
    """The stdin of one call: every argument's tokens, in order."""
    out: list[str] = []
    for kind, value in zip(param_types(signature), args, strict=True):
        encode_value(kind, value, out)
    return " ".join(out) + "\n"


def param_names(signature: dict[str, Any]) -> list[str]:
    return [param["name"] for param in signature.get("params") or ()]


def indented(body: str, depth: int = 1) -> str:
    """`body`'s lines indented `depth` levels of four spaces: a function's body in a declaration."""
    return "".join("    " * depth + line + "\n" for line in body.splitlines())
