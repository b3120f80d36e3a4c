"""The solution's side of a run: a process forked from the pristine zygote, so it
holds no test and no expected value, that loads the candidate and answers the
judge. Whatever the candidate does here, only plain data goes back."""

from __future__ import annotations

import io
import os
import sys
import types

from . import codec, protocol

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

SOLUTION_MODULE = "solution"


def _describe_class(klass: type) -> dict[str, Any]:
    """An exception class as plain data: its name and the built-in exception classes
    it derives from, so the judge can make a look-alike that a test's `except
    ValueError` or `pytest.raises(ValueError)` catches."""
    import builtins

    bases = [
        k.__name__ for k in klass.__mro__ if getattr(builtins, k.__name__, None) is k and issubclass(k, BaseException)
    ]
    return {"type": klass.__name__, "bases": bases}


def _describe(exc: BaseException) -> dict[str, Any]:
    return {**_describe_class(type(exc)), "message": str(exc)[:2000]}


def _format_exc(limit: int | None = None) -> str:
    """The current exception's traceback. traceback is imported here, not at the top:
    a cold sandbox starts faster without it (the warm zygote has it loaded), and a
    candidate that broke imports still gets its error reported."""
    try:
        import traceback

        return traceback.format_exc(limit=limit)
    except BaseException:
        kind, value = sys.exc_info()[:2]
        return f"{getattr(kind, '__name__', kind)}: {value}\n"


def _module() -> types.ModuleType:
    module = types.ModuleType(SOLUTION_MODULE)
    module.__file__ = os.path.abspath("solution.py")
    return module


def _load(source: str) -> types.ModuleType:
    module = _module()
    sys.modules[SOLUTION_MODULE] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - running the candidate is the point
    return module


def _hang_up() -> None:
    """Close our output now, so the judge reads its end without waiting for this
    process to be torn down."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: S110 - the candidate may have replaced or closed it
            pass
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass


def _linger() -> None:
    """Wait, idle, for the harness to end the run. The judge reads this process's
    CPU time and peak memory from /proc (the kernel's figures, not ours) once its
    output has ended, so no run waits for a process to be torn down."""
    import signal

    while True:
        signal.pause()


# What a handle's flags tell the judge about its object (remote.RemoteObject).
CALLABLE, OWN_EQ, HAS_BASE = 1, 2, 4
# Built-in value types an object of the candidate's class may derive from: the judge
# compares it by the value the base type's own methods read (base_value).
_CARRIED = (list, dict, tuple, set, frozenset, str, bytes, bytearray, int, float)


class _Objects:
    """Objects that are not plain data stay here; the judge gets a handle to each."""

    def __init__(self) -> None:
        self.by_id: dict[int, Any] = {}
        self.ids: dict[int, int] = {}

    def export(self, value: Any) -> dict[str, Any]:
        if isinstance(value, type) and issubclass(value, BaseException):
            # The judge mirrors exception classes, so a test can name one in pytest.raises.
            return {"exception_class": _describe_class(value), "handle": self.handle(value)}
        try:
            return {"value": codec.encode(value, handle_of=self.remote)}
        except codec.NotPlainData:  # too deep or too big to send: the whole value stays here
            return {"value": self.remote(value, sendable=False)}

    def remote(self, value: Any, *, sendable: bool = True) -> dict[str, Any]:
        """The tag of a handle to `value`, with what the judge may know of it. A value
        too deep or too big to send is not offered as one (no HAS_BASE)."""
        flags = CALLABLE if callable(value) else 0
        try:
            klass = type(value)
            if klass.__eq__ is not object.__eq__:
                flags |= OWN_EQ
            if sendable and any(base in _CARRIED for base in klass.__mro__):
                flags |= HAS_BASE
        except Exception:  # noqa: S110 - a class that breaks its own lookups gets identity only
            pass
        return {"$remote": [self.handle(value), type(value).__qualname__[:100], flags]}

    def handle(self, value: Any) -> int:
        key = id(value)
        if key not in self.ids:
            self.ids[key] = len(self.by_id) + 1
            self.by_id[self.ids[key]] = value  # keeps it alive, so its id stays its own
        return self.ids[key]

    def resolve(self, handle: Any) -> Any:
        if handle not in self.by_id:
            raise KeyError(f"no object with handle {handle!r}")
        return self.by_id[handle]


def state(obj: Any) -> list[Any]:
    """[its class, {field: value}]: what the judge compares two objects of the
    candidate's classes by, in place of their own __eq__. A dataclass's compared
    fields, as its generated __eq__ compares them; else its instance attributes
    and slots."""
    klass = type(obj)
    if "dataclasses" in sys.modules and sys.modules["dataclasses"].is_dataclass(klass):
        fields = {f.name: getattr(obj, f.name) for f in sys.modules["dataclasses"].fields(obj) if f.compare}
        return [klass, fields]
    fields = dict(object.__getattribute__(obj, "__dict__")) if hasattr(obj, "__dict__") else {}
    for owner in klass.__mro__:
        slots = owner.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                fields[name] = getattr(obj, name)
    return [klass, fields]


def base_value(obj: Any) -> Any:
    """The value of the built-in type an object derives from, read with that type's
    own methods (not the candidate's overrides): [1, 2] for a list subclass, a Counter
    for a Counter subclass (whose == treats a missing count as zero)."""
    collections = sys.modules.get("collections")
    for base in type(obj).__mro__:
        if collections is not None and base is collections.Counter:
            return collections.Counter(dict(dict.items(obj)))  # a mapping: its counts, not its pairs counted
        if collections is not None and base is collections.OrderedDict:
            return collections.OrderedDict(collections.OrderedDict.items(obj))
        if base is list or base is tuple or base is set or base is frozenset:
            return base(base.__iter__(obj))
        if base is dict:
            return dict(dict.items(obj))
        if base is str:
            return str.__str__(obj)
        if base is bytes or base is bytearray:
            return base(memoryview(obj))
        if base is int:
            return int.__int__(obj)
        if base is float:
            return float.__float__(obj)
    raise TypeError(f"{type(obj).__qualname__} derives from no built-in value type")


def _set_attr(obj: Any, arg: Any) -> None:
    name, value = arg
    setattr(obj, str(name), value)


def _set_item(obj: Any, arg: Any) -> None:
    key, value = arg
    obj[key] = value


def _del_item(obj: Any, key: Any) -> None:
    del obj[key]


# Operations the judge may ask of an object it holds a handle to; each answers
# with a value of the type Python's protocol demands, so nothing rigged returns.
# Setting an attribute or an item (a test's setup building a tree of the
# candidate's nodes) changes the candidate's objects only, and answers None.
_OPS = {
    "len": lambda obj, _: len(obj),
    "bool": lambda obj, _: bool(obj),
    "str": lambda obj, _: str(obj),
    "repr": lambda obj, _: repr(obj),
    "list": lambda obj, _: list(obj),
    "contains": lambda obj, arg: bool(arg in obj),
    "getitem": lambda obj, arg: obj[arg],
    "setattr": _set_attr,
    "delattr": lambda obj, arg: delattr(obj, str(arg)),
    "setitem": _set_item,
    "delitem": _del_item,
    "state": lambda obj, _: state(obj),
    "base": lambda obj, _: base_value(obj),
}


def serve_calls(chan: Any, source: str) -> None:
    """Load the candidate, then answer the judge's requests until it hangs up:
    call or get a module-level name, or call, get an attribute of, or apply an
    operation to an object it holds a handle to."""
    fd = chan.fileno()
    try:
        module = _load(source)
    except MemoryError:
        protocol.send(fd, {"loaded": False, "memory": True})
        return
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import...
        protocol.send(fd, {"loaded": False, "error": _describe(exc), "traceback": _format_exc(limit=5)})
        return
    protocol.send(fd, {"loaded": True})
    objects = _Objects()
    while True:
        try:
            request = protocol.receive(fd)
        except protocol.ChannelClosed:
            _hang_up()
            _linger()
        protocol.send(fd, _answer(request, module, objects))


def _answer(request: dict[str, Any], module: types.ModuleType, objects: _Objects) -> dict[str, Any]:
    reply: dict[str, Any] = {"id": request.get("id")}
    try:
        if "target" in request:
            target = objects.resolve(request["target"])
            if request.get("attr") is not None:
                target = getattr(target, request["attr"])
        else:
            target = getattr(module, request["name"])
        op = request["op"]
        if op == "get":
            value = target
        elif op == "call":
            args = codec.decode(request["args"], resolve=objects.resolve)
            kwargs = codec.decode(request["kwargs"], resolve=objects.resolve)
            value = target(*args, **kwargs)
        else:
            argument = codec.decode(request.get("arg"), resolve=objects.resolve)
            value = _OPS[op](target, argument)
        reply.update(objects.export(value))
    except MemoryError:
        reply["memory"] = True
    except BaseException as exc:  # the candidate's own exceptions, SystemExit included
        reply["raised"] = _describe(exc)
    return reply


def seed_random(seed: int, code: Any) -> None:
    """Code that draws from `random` draws the same numbers for the same seed: in a
    solution process `code` is the candidate's source, in the judge the tests.
    A warm sandbox has `random` loaded; a cold one imports it (~4 ms) only for
    code that names it. (Code that hides the name from us gets unseeded numbers,
    as it would from os.urandom: its own results are then what varies.)"""
    if "random" not in sys.modules and "random" not in (code if isinstance(code, str) else repr(code)):
        return
    import random

    random.seed(seed)


# What a spare runs through while it waits (zygote.rehearse_solution): a process forked from
# the zygote shares its pages until it writes to one, and each first write costs a
# copy (a fault, ~5 us here). Walking a run's own code path once, before the run,
# takes those copies off the run's clock: about 70 of them, a tenth of a warm check.
REHEARSAL_SOURCE = "def add(a, b):\n    return a + b\n"


def rehearse(source: str) -> Iterator[None]:
    """Load `source` (REHEARSAL_SOURCE) as serve_calls loads a candidate, but into no
    module table, and answer one call to it through a pipe as a run would; a
    generator that pauses between steps, so a spare can stop when its run comes.
    Leaves nothing behind, finished or stopped: the module emptied, the pipe closed."""
    module = _module()
    read_end, write_end = os.pipe()
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own two lines
        yield
        protocol.send(write_end, {"loaded": True})
        protocol.receive(read_end)
        yield
        call = {"id": 1, "op": "call", "name": "add", "args": codec.encode((1, 2)), "kwargs": codec.encode({})}
        protocol.send(write_end, call)
        protocol.send(write_end, _answer(protocol.receive(read_end), module, _Objects()))
        protocol.receive(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
        module.__dict__.clear()  # the function and its globals hold each other: no cycle left for gc


def run_program(source: str) -> None:
    """stdio kind: the candidate is a program; fds 0/1/2 are already the judge's pipes."""
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=False)
    code = 0
    try:
        exec(compile(source, os.path.abspath("solution.py"), "exec"), {"__name__": "__main__"})  # noqa: S102
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except MemoryError:
        code = 86
    except BaseException:
        sys.stderr.write(_format_exc())
        code = 1
    try:
        sys.stdout.flush()
    finally:
        os._exit(code)
