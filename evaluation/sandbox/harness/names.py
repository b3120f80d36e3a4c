"""Names of the builtins and the standard library, and the objects they name here.

A type or a function crosses the solution boundary by its module and qualified
name (codec.py); a test sees the modules the solution imported (scope.py). In
both, the receiving side looks a name up only among objects it already trusts:
the builtins and modules of the standard library (sys.stdlib_module_names) that
were loaded from the interpreter's own files. It never imports a module from
anywhere else (the scratch directory, the working directory: what a candidate
could have written), nor a module that acts when imported (`this` prints,
`antigravity` starts a browser).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

_FUNCTION = type(lambda: None)
_BUILTIN = type(len)
# Types the builtins module does not hold under their own name.
_SPECIAL: dict[tuple[str, str], Any] = {
    ("builtins", "NoneType"): type(None),
    ("builtins", "ellipsis"): type(...),
    ("builtins", "NotImplementedType"): type(NotImplemented),
}
STDLIB_DIR = os.path.dirname(os.path.realpath(os.__file__))
STDLIB_PATHS = [STDLIB_DIR, os.path.join(STDLIB_DIR, "lib-dynload")]
# Standard-library modules that act when imported, or are of no use to a test.
NEVER_IMPORTED = frozenset({
    "this", "antigravity", "idlelib", "turtledemo", "turtle", "tkinter", "_tkinter", "__hello__", "__phello__",
    "__main__", "test", "ensurepip", "venv", "lib2to3", "pydoc", "pydoc_data", "webbrowser", "site",
})  # fmt: skip

# What the judge takes by name from the solution's answers: types and functions of
# modules that compute on values and touch nothing else, so that test code calling
# one (a key function, a type it was handed) can do no more than compute. Any other
# name stays a handle (calls go to the solution's process) or is refused.
JUDGE_MODULES = frozenset({
    "builtins", "math", "cmath", "operator", "_operator", "collections", "_collections", "_collections_abc",
    "numbers", "decimal", "_decimal", "_pydecimal", "fractions", "datetime", "_datetime", "heapq", "_heapq",
    "bisect", "_bisect", "itertools", "functools", "_functools", "string", "statistics", "re", "_sre", "enum",
    "abc", "_abc", "array", "copy", "textwrap", "unicodedata", "keyword", "calendar", "json", "struct", "_struct",
})  # fmt: skip
JUDGE_REFUSED_BUILTINS = frozenset({
    "eval", "exec", "compile", "open", "breakpoint", "input", "exit", "quit", "help", "globals", "locals", "vars",
    "setattr", "delattr", "getattr", "print", "copyright", "credits", "license",
})  # fmt: skip


def is_standard(module: str) -> bool:
    """Whether `module` names the builtins or a module of the standard library."""
    return module == "builtins" or module.partition(".")[0] in sys.stdlib_module_names


_TRUSTED: dict[int, tuple[Any, bool]] = {}


def trusted_module(found: Any) -> bool:
    """Whether a loaded module came from the interpreter itself: built in, frozen, or a
    file under the standard library's directory (not its site- or dist-packages).
    Remembered per module object (each check resolves a path)."""
    known = _TRUSTED.get(id(found))
    if known is not None and known[0] is found:
        return known[1]
    verdict = _trusted(found)
    if len(_TRUSTED) > 4096:
        _TRUSTED.clear()
    _TRUSTED[id(found)] = (found, verdict)
    return verdict


def _trusted(found: Any) -> bool:
    spec = getattr(found, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if origin in ("built-in", "frozen"):
        return True
    path = getattr(found, "__file__", None) or origin
    if type(path) is not str:
        return False
    real = os.path.realpath(path)
    return real.startswith(STDLIB_DIR + os.sep) and "-packages" not in real[len(STDLIB_DIR) :]


def standard_module(name: str) -> Any:
    """The standard-library module `name` as loaded here, importing it from the
    interpreter's own directories if it is not loaded yet; None if `name` is not
    one, acts when imported, or was not loaded from the standard library."""
    if type(name) is not str or not is_standard(name) or name.partition(".")[0] in NEVER_IMPORTED:
        return None
    if name == "builtins":
        import builtins

        return builtins
    found = sys.modules.get(name)
    if found is None:
        saved = sys.path[:]
        sys.path[:] = STDLIB_PATHS  # whatever else is on the path, the import cannot find it
        try:
            __import__(name)
        except Exception:
            return None
        finally:
            sys.path[:] = saved
        found = sys.modules.get(name)
    return found if found is not None and trusted_module(found) else None


def _walk(start: Any, qualname: str) -> Any:
    found = start
    for part in qualname.split("."):
        if not part.isidentifier() or part.startswith("_"):
            return None  # <lambda>, <locals>, and nothing private
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def _nameable(value: Any) -> bool:
    kind = type(value)
    return kind is _FUNCTION or kind is _BUILTIN or issubclass(kind, type)


def name_of(value: Any) -> tuple[str, str] | None:
    """(module, qualified name) of a type or function of the builtins or the standard
    library that is found again under that name here; else None (a lambda, a
    candidate's function or class, one whose name was changed to another's)."""
    if not _nameable(value):
        return None
    for key, special in _SPECIAL.items():
        if special is value:
            return key
    try:
        module, qualname = value.__module__, value.__qualname__
    except Exception:
        return None
    if type(module) is not str or type(qualname) is not str or not is_standard(module):
        return None
    loaded = sys.modules.get(module)
    if loaded is None or not trusted_module(loaded):
        return None
    return (module, qualname) if _walk(loaded, qualname) is value else None


def resolve(module: str, qualname: str) -> Any:
    """The type or function named (module, qualname) here, or None. Only what the
    standard library defines under that very name: not an alias it imported from
    elsewhere (`os.system` is posix's), not a module, not a private name."""
    special = _SPECIAL.get((module, qualname))
    if special is not None:
        return special
    found = _walk(standard_module(module), qualname) if len(qualname) < 300 else None
    if found is None or not _nameable(found):
        return None
    try:
        own = (found.__module__, found.__qualname__)
    except Exception:
        return None
    return found if own == (module, qualname) else None


# Calls any method of whatever it is applied to (`methodcaller("clear")(expected)`).
JUDGE_REFUSED = frozenset({("operator", "methodcaller"), ("_operator", "methodcaller")})


def judge_policy(module: str, qualname: str) -> bool:
    """Whether the judge looks up a name that came from the solution's process."""
    if module.partition(".")[0] not in JUDGE_MODULES and module not in JUDGE_MODULES:
        return False
    if (module, qualname) in JUDGE_REFUSED:
        return False
    return not (module == "builtins" and qualname in JUDGE_REFUSED_BUILTINS)
