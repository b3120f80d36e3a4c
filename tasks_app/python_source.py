"""What the task pages and importers read from Python source without running it: whether
it parses (and where not), and the names it defines at its top level."""

from __future__ import annotations

import ast


def _syntax_message(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" if exc.lineno else "unknown line"
    if exc.offset:
        where += f", column {exc.offset}"
    return f"syntax error at {where}: {exc.msg}"


def compile_error(source: str) -> str | None:
    """Return a message naming the line of a syntax error, or None if `source` parses."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return _syntax_message(exc)
    except ValueError as exc:  # e.g. a NUL byte, which ast refuses outright
        return f"cannot be parsed: {exc}"
    return None


def top_level_names(source: str) -> set[str]:
    tree = ast.parse(source)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names
