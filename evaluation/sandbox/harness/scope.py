"""The scope test code runs in, in the judge: what the candidate defines and imports
at top level, read from its source without running it (and without the `ast`
module), bound as proxies to the solution process or as the judge's own copies of
standard modules; then the suite's setup, whose failure is told with a traceback
of its own code."""

from __future__ import annotations

from . import names
from .remote import proxy

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge

_parsed: list[Any] = [None, None]  # (source, its module's statements): one parse a run, not three


def _statements(source: str) -> list[Any]:
    """The top-level statements of `source`, parsed without running it (and without
    the `ast` module, ~12 ms in a cold sandbox: the C node classes of `_ast`)."""
    import _ast

    if _parsed[0] is not source:
        try:
            body = compile(source, "<solution>", "exec", _ast.PyCF_ONLY_AST, dont_inherit=True).body
        except (SyntaxError, ValueError):  # ValueError: a null byte in the source
            body = []
        _parsed[:] = [source, body]
    return _parsed[1]


def top_level_names(source: str) -> tuple[set[str], set[str]]:
    """(callables, other names) that a module defines at top level, read without running it.

    tasks_app.content has a cousin; this one stays here because the harness runs
    inside the sandbox with the standard library only."""
    import _ast

    callables, values = set(), set()
    for node in _statements(source):
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            callables.add(node.name)
        elif isinstance(node, (_ast.Assign, _ast.AnnAssign)):
            targets = node.targets if isinstance(node, _ast.Assign) else [node.target]
            values.update(t.id for t in targets if isinstance(t, _ast.Name))
    return callables, values - callables


SETUP_FILENAME = "<test setup>"


def top_level_imports(source: str) -> list[tuple[str, str, str | None]]:
    """(name bound, module, attribute or None) for each top-level import of a module,
    read without running it: `import a.b` binds a to a; `import a.b as c`, c to a.b;
    `from a import b as c`, c to a's b. Relative and star imports bind nothing here."""
    import _ast

    found: list[tuple[str, str, str | None]] = []
    for node in _statements(source):
        if isinstance(node, _ast.Import):
            for alias in node.names:
                if alias.asname:
                    found.append((alias.asname, alias.name, None))
                else:
                    top = alias.name.partition(".")[0]
                    found.append((top, top, None))
        elif isinstance(node, _ast.ImportFrom) and not node.level and node.module and node.module != "__future__":
            found.extend((a.asname or a.name, node.module, a.name) for a in node.names if a.name != "*")
    return found


def exception_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def setup_traceback(exc: BaseException, setup: str) -> str:
    """The setup's traceback as a curator reads it: the frames of the setup's own code
    (and of the tests' helpers it called), with their lines, then the exception; the
    harness's frames between the setup and the candidate are left out."""
    import linecache
    import traceback

    linecache.cache[SETUP_FILENAME] = (len(setup), None, setup.splitlines(True), SETUP_FILENAME)
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<")]
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    finally:
        linecache.cache.pop(SETUP_FILENAME, None)
    return (text + exception_line(exc))[-4000:]


def namespace(judge: Judge, child: Child) -> dict[str, Any]:
    """The names test code sees: the modules and names the candidate imports at top
    level (the judge's own copies, standard library only), the candidate's top-level
    functions, classes and plain values (as proxies), then the suite's setup. A
    candidate's name that shadows a builtin is left out (the entry point aside):
    otherwise a solution defining `abs` or `len` would rewrite the tests' own
    arithmetic. The setup runs last, so what the tests define is theirs."""
    import builtins

    callables, values = top_level_names(judge.run_spec["solution"])
    shadowing = set(vars(builtins)) - {judge.run_spec.get("entry_point") or ""}
    callables, values = callables - shadowing, values - shadowing
    scope: dict[str, Any] = {"__name__": "__judge__"}
    scope.update(imported(judge))
    for name in callables:
        scope[name] = proxy(judge, child, name)
    for name in values:
        try:
            scope[name] = judge.get(child, name)
        except Exception:  # noqa: S110 - it raised at access: a test that needs it fails on the NameError
            pass
    setup = judge.tests.get("setup") or ""
    if setup:
        exec(compile(setup, SETUP_FILENAME, "exec"), scope)  # noqa: S102 - the curator's test code
    return scope


def imported(judge: Judge, wanted: Any = None) -> dict[str, Any]:
    """What the candidate's top-level imports bind, as the judge's own objects: a
    test may use a module only the solution imports (`sys`, `math as m`, `from
    collections import Counter`), as it could if both ran in one process. Only
    modules of the standard library, found among the interpreter's own files
    (names.standard_module), never a file a candidate wrote; never a name that
    would shadow a builtin (`from operator import not_ as abs`), nor one the candidate
    also defines itself (its own stays a proxy). `wanted(name)` picks the names to
    look up (by default those the tests' text mentions: nothing is imported here for
    a name no test uses, `typing`'s `List` say)."""
    import builtins

    source = judge.run_spec["solution"]
    if wanted is None:
        text = tests_text(judge.tests)
        wanted = text.__contains__
    callables, values = top_level_names(source)
    bound: dict[str, Any] = {}
    for name, module, attribute in top_level_imports(source):
        if name in vars(builtins) or name in callables or name in values or not wanted(name):
            continue  # a builtin stays one; a name the candidate defines itself is its own
        found = names.standard_module(module)
        if found is not None and attribute is not None:
            found = getattr(found, attribute, None)
            if found is None:
                found = names.standard_module(f"{module}.{attribute}")
        if found is not None:
            bound[name] = found
    return bound


def tests_text(tests: dict[str, Any]) -> str:
    """All the suite's code as one text: its setup and every test given as source."""
    parts = [tests.get("setup") or ""]
    parts += [t for t in (tests.get("visible") or []) + (tests.get("hidden") or []) if isinstance(t, str)]
    return "\n".join(parts)
