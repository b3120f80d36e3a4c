"""The judge's side of the remote-call protocol with a solution process.

Every use a test makes of the candidate's code is a request to its process: a call,
an attribute, an item, an operator. Arguments go as plain data (codec.py), or as
handles back to objects of the candidate's; answers come back as plain data, as
handles (RemoteObject), or as look-alikes of the exceptions the candidate raised.
No method of the candidate's runs in the judge, so none decides an assertion.
"""

from __future__ import annotations

import select
import time

from . import codec, names, protocol
from .outcomes import FATAL, CandidateFailure, SuiteProblem

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge


class RemoteCalls:
    """The requests a judge makes of its solution processes (a part of Judge: it uses
    the judge's deadline, limits, kill and reap, and keeps its handles)."""

    def _failure_from_exit(self, child: Child) -> CandidateFailure:
        if child.out.exceeded or child.err.exceeded:
            return CandidateFailure("output", f"the candidate wrote more than {self.output_cap} bytes of output")
        status = self.reap(child)
        signal_number, code = status.get("signal"), status.get("code")
        if status.get("cpu_exceeded") or signal_number in (24,):  # SIGXCPU
            return CandidateFailure("timeout", "the candidate used up its CPU time")
        if status.get("memory_exceeded"):
            return CandidateFailure("memory", "the candidate ran out of memory")
        if signal_number:
            return CandidateFailure("exited", f"the candidate's process was killed by signal {signal_number}")
        return CandidateFailure("exited", f"the candidate's process exited (code {code}) before answering")

    def request(self, child: Child, message: dict[str, Any], *, budget_s: float | None = None) -> dict[str, Any]:
        """One request and its reply. With `budget_s`, a call that outlasts it kills the
        process and raises CandidateFailure("budget"), which ends no run: the caller
        (an exploration, trying one input after another) counts it and starts anew."""
        if child.chan is None or child.exit is not None:
            raise self._failure_from_exit(child)
        child.seq += 1
        message["id"] = child.seq
        fd = child.chan.fileno()
        try:
            protocol.send(fd, message)
        except OSError:
            raise self._failure_from_exit(child) from None
        wait = self.remaining() if budget_s is None else min(budget_s, self.remaining())
        ready, _, _ = select.select([fd], [], [], max(0.0, wait))
        if not ready:
            self.kill(child)
            if budget_s is not None and wait < self.remaining():
                raise CandidateFailure("budget", f"no answer within its budget of {budget_s:.3g} s")
            raise CandidateFailure("timeout", f"no answer within the {self.limits['wall_s']} s wall-time limit")
        if budget_s is None:
            reply = self.receive_from(child)
        else:  # a reply begun but stalled is held to the same budget
            reply = self.receive_from(child, time.monotonic() + wait, "budget")
        if not isinstance(reply, dict) or reply.get("id") != child.seq:
            self.kill(child)
            raise CandidateFailure("exited", "the candidate answered out of turn")
        if reply.get("memory"):
            raise CandidateFailure("memory", "the candidate ran out of memory (MemoryError)")
        return reply

    def fatal_seen(self, failure: CandidateFailure) -> CandidateFailure:
        if failure.kind in FATAL and self.fatal_failure is None:
            self.fatal_failure = failure
        return failure

    def receive_from(self, child: Child, deadline: float | None = None, kind: str = "timeout") -> Any:
        """A frame from the candidate, read against the wall-time deadline (or an earlier
        one): it may close, corrupt or stall its channel, and each of those is its failure."""
        try:
            return protocol.receive(child.chan.fileno(), deadline=min(deadline or self.deadline, self.deadline))
        except protocol.ChannelClosed:
            raise self._failure_from_exit(child) from None
        except protocol.ChannelTimeout:
            self.kill(child)
            limit = "the wall-time limit" if kind == "timeout" else "its budget"
            raise CandidateFailure(kind, f"the candidate stalled mid-answer past {limit}") from None
        except protocol.ChannelCorrupt as exc:
            self.kill(child)
            raise CandidateFailure("exited", f"the candidate corrupted its channel: {exc}") from None

    def call(self, child: Child, name: str, args: tuple, kwargs: dict) -> Any:
        return self.remote(child, {"op": "call", "name": name}, name, args, kwargs)

    def get(self, child: Child, name: str) -> Any:
        return self.remote(child, {"op": "get", "name": name}, name)

    def remote(self, child: Child, message: dict[str, Any], what: str, args: tuple = (), kwargs: Any = None) -> Any:
        """One request to the candidate; its answer as plain data or a handle."""
        if message["op"] == "call" or "arg" in message:
            handle_of = self._handle_of(child)
            try:
                if message["op"] == "call":
                    message["args"] = codec.encode(tuple(args), handle_of=handle_of)
                    message["kwargs"] = codec.encode(dict(kwargs or {}), handle_of=handle_of)
                else:
                    message["arg"] = codec.encode(message["arg"], handle_of=handle_of)
            except codec.NotPlainData as exc:
                raise SuiteProblem(f"the test passes {what} an argument that is not plain data: {exc}") from None
        try:
            reply = self.request(child, message)
        except CandidateFailure as exc:
            raise self.fatal_seen(exc) from None
        return self._value(child, what, reply)

    def _handle_of(self, child: Child) -> Any:
        """How the test's own references to the candidate's objects go back to it: a
        handle it gave us, or a top-level name of its (fetched as a handle)."""

        def handle_of(value: Any) -> Any:
            if isinstance(value, _Proxy) and value._child is child:
                value = self.get(child, value._name)
                if not isinstance(value, RemoteObject):
                    return codec.encode(value)
            if isinstance(value, RemoteObject) and value._child is child:
                return {"$handle": value._handle}
            return None

        return handle_of

    def remote_object(self, child: Child, body: Any) -> RemoteObject:
        """The one RemoteObject of a handle the candidate sent ({"$remote": [id, type, flags]}):
        the same handle is the same object here, so `is` holds where it holds there."""
        if type(body) is not list or len(body) != 3 or type(body[0]) is not int or type(body[2]) is not int:
            raise ValueError(f"not an encoded value: a handle of {str(body)[:80]}")
        key = (id(child), body[0])
        found = self.remotes.get(key)
        if found is None:
            found = self.remotes[key] = RemoteObject(self, child, body[0], str(body[1])[:100], body[2])
        return found

    def _value(self, child: Child, what: str, reply: dict[str, Any]) -> Any:
        if "raised" in reply:
            raise mirror(what, reply["raised"])
        if "exception_class" in reply:
            if _mirror_class(reply["exception_class"]) is not None:
                return _mirror_class(reply["exception_class"])
            reply = {"value": {"$remote": [reply.get("handle"), "class", 1]}}
        try:
            return codec.decode(reply["value"], remote=lambda body: self.remote_object(child, body),
                                policy=names.judge_policy)  # fmt: skip
        except (KeyError, TypeError, ValueError, RecursionError):
            raise CandidateFailure("exited", f"{what}'s answer is malformed") from None

    def structurally_equal(self, left: RemoteObject, right: RemoteObject) -> bool:
        """`==` between two objects of the candidate's classes that define their own
        __eq__, decided here: the same class, the same built-in value if they derive
        from one, and equal fields (a dataclass's compared fields; else every
        attribute), compared with Python's == on what we rebuilt. Their __eq__ never
        runs. A pair met again while it is being compared (a cycle) counts as equal."""
        key = (left._handle, right._handle)
        if key in self.comparing:
            return True
        self.comparing.add(key)
        try:
            left_class, left_fields = left._ask({"op": "state", "arg": None}, f"the state of {left._type}")
            right_class, right_fields = right._ask({"op": "state", "arg": None}, f"the state of {right._type}")
            if left_class is not right_class:
                return False
            if left._flags & HAS_BASE and left._base() != right._base():
                return False
            return bool(left_fields == right_fields)
        finally:
            self.comparing.discard(key)


# A handle's flags, as the solution's side sets them (solution.CALLABLE, ...).
CALLABLE, OWN_EQ, HAS_BASE = 1, 2, 4


def _on_base(operation: Any) -> Any:
    """A method that works on the built-in value a handle's object derives from (an
    IntEnum member's int, a list subclass's list), rebuilt here: the candidate's own
    __add__ or __lt__ never runs. For other objects it is NotImplemented (TypeError)."""

    def method(self: RemoteObject, *args: Any) -> Any:
        if not self._flags & HAS_BASE:
            if not args:  # a unary operator does not turn NotImplemented into a TypeError
                raise TypeError(f"bad operand: {self._type} in the solution's process")
            return NotImplemented
        return operation(self._base(), *args)

    return method


class RemoteObject:
    """A handle to an object that lives in the solution's process. Every use is a
    request there, and no method of the candidate's decides an assertion here:

    - `==` is identity for an object whose class keeps object's own __eq__ (as
      Python's is); for one whose class defines __eq__ (a dataclass, a value class),
      it is decided here from the two objects' states (Judge.structurally_equal);
    - an object deriving from a built-in value type (an int subclass, an IntEnum
      member, a list subclass) compares, orders, does arithmetic, has a length and
      a truth value as that value, read with the base type's own methods and rebuilt
      here;
    - setting an attribute or an item changes the candidate's object (a test's setup
      building a tree of its nodes), which decides nothing."""

    __slots__ = ("_child", "_flags", "_handle", "_judge", "_type")

    def __init__(self, judge: Judge, child: Child, handle: Any, type_name: str, flags: int = 0) -> None:
        object.__setattr__(self, "_judge", judge)
        object.__setattr__(self, "_child", child)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_flags", flags)

    def _ask(self, message: dict[str, Any], what: str, args: tuple = (), kwargs: Any = None) -> Any:
        message["target"] = self._handle
        return self._judge.remote(self._child, message, what, args, kwargs)

    def _base(self) -> Any:
        return self._ask({"op": "base", "arg": None}, f"the value of {self._type}")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._ask({"op": "get", "attr": attr}, f"{self._type}.{attr}")

    def __setattr__(self, attr: str, value: Any) -> None:
        self._ask({"op": "setattr", "arg": [attr, value]}, f"{self._type}.{attr} = ...")

    def __delattr__(self, attr: str) -> None:
        self._ask({"op": "delattr", "arg": attr}, f"del {self._type}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask({"op": "call", "attr": None}, f"{self._type}()", args, kwargs)

    def __len__(self) -> int:
        if self._flags & HAS_BASE:
            return len(self._base())
        return int(self._ask({"op": "len"}, f"len({self._type})"))

    def __bool__(self) -> bool:
        if self._flags & HAS_BASE:
            return bool(self._base())
        return bool(self._ask({"op": "bool"}, f"bool({self._type})"))

    def __iter__(self) -> Any:
        if self._flags & HAS_BASE:
            return iter(self._base())
        return iter(self._ask({"op": "list"}, f"list({self._type})"))

    def __contains__(self, item: Any) -> bool:
        if self._flags & HAS_BASE:
            return item in self._base()
        return bool(self._ask({"op": "contains", "arg": item}, f"in {self._type}"))

    def __getitem__(self, key: Any) -> Any:
        return self._ask({"op": "getitem", "arg": key}, f"{self._type}[...]")

    def __setitem__(self, key: Any, value: Any) -> None:
        self._ask({"op": "setitem", "arg": [key, value]}, f"{self._type}[...] = ...")

    def __delitem__(self, key: Any) -> None:
        self._ask({"op": "delitem", "arg": key}, f"del {self._type}[...]")

    def __str__(self) -> str:
        return str(self._ask({"op": "str"}, f"str({self._type})"))

    def __repr__(self) -> str:
        return f"<{self._type} in the solution's process>"

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, RemoteObject):
            if other._child is not self._child:
                return False
            if other._handle == self._handle:
                return True
            if self._flags & OWN_EQ and other._flags & OWN_EQ:
                return self._judge.structurally_equal(self, other)
            return False
        if self._flags & HAS_BASE:
            return bool(self._base() == other)
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("remote", self._handle))

    __lt__ = _on_base(lambda value, other: value < other)
    __le__ = _on_base(lambda value, other: value <= other)
    __gt__ = _on_base(lambda value, other: value > other)
    __ge__ = _on_base(lambda value, other: value >= other)
    __add__ = _on_base(lambda value, other: value + other)
    __radd__ = _on_base(lambda value, other: other + value)
    __sub__ = _on_base(lambda value, other: value - other)
    __rsub__ = _on_base(lambda value, other: other - value)
    __mul__ = _on_base(lambda value, other: value * other)
    __rmul__ = _on_base(lambda value, other: other * value)
    __truediv__ = _on_base(lambda value, other: value / other)
    __rtruediv__ = _on_base(lambda value, other: other / value)
    __floordiv__ = _on_base(lambda value, other: value // other)
    __rfloordiv__ = _on_base(lambda value, other: other // value)
    __mod__ = _on_base(lambda value, other: value % other)
    __rmod__ = _on_base(lambda value, other: other % value)
    __neg__ = _on_base(lambda value: -value)
    __pos__ = _on_base(lambda value: +value)
    __abs__ = _on_base(lambda value: abs(value))

    def __int__(self) -> int:
        if not self._flags & HAS_BASE:
            raise TypeError(f"int() of {self._type} in the solution's process")
        return int(self._base())

    def __float__(self) -> float:
        if not self._flags & HAS_BASE:
            raise TypeError(f"float() of {self._type} in the solution's process")
        return float(self._base())

    def __index__(self) -> int:
        value = self._base() if self._flags & HAS_BASE else None
        if type(value) is not int:
            raise TypeError(f"{self._type} in the solution's process is not an integer")
        return value


_MIRRORS: dict[tuple[str, str], type] = {}


class CandidateRaised:
    """Marks an exception the judge raises on the candidate's behalf."""


def _mirror_class(raised: Any) -> type | None:
    """A class of the candidate's exception's name deriving from the same built-in
    exception (ValueError, KeyError, ...), the same class for the same pair, so
    `except` clauses and `pytest.raises` work in the judge. Only Exception's
    family is mirrored; SystemExit and the like end the test instead."""
    import builtins

    raised = raised if isinstance(raised, dict) else {}
    name = str(raised.get("type", "Exception"))[:100]
    bases = raised.get("bases") if isinstance(raised.get("bases"), list) else []
    base = next(
        (getattr(builtins, b) for b in bases if isinstance(getattr(builtins, str(b), None), type)
         and issubclass(getattr(builtins, b), Exception)),
        None,
    )  # fmt: skip
    if base is None:
        return None
    key = (name, base.__name__)
    if key not in _MIRRORS and len(_MIRRORS) > 1000:
        _MIRRORS.clear()  # a candidate inventing names cannot grow the judge without bound
    if key not in _MIRRORS:
        _MIRRORS[key] = type(name, (base, CandidateRaised), {"__str__": lambda self: self.args[0] if self.args else ""})
    return _MIRRORS[key]


def mirror(what: str, raised: Any) -> BaseException:
    """The candidate's exception, raised in the judge as its look-alike."""
    details = raised if isinstance(raised, dict) else {}
    text = f"{what} raised {str(details.get('type'))[:100]}: {str(details.get('message', ''))[:2000]}"
    klass = _mirror_class(raised)
    return klass(text) if klass is not None else CandidateFailure("raised", text)


# Its name is what test code sees in its own errors ("'_Proxy' object is not subscriptable").
class _Proxy:
    """A top-level function or class of the candidate's: calling it is a request, and so
    is reading one of its attributes (a class's constants, an enum's members)."""

    def __init__(self, judge: Judge, child: Child, name: str) -> None:
        self._judge, self._child, self._name = judge, child, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._judge.call(self._child, self._name, args, kwargs)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._judge.get(self._child, self._name), attr)

    def __repr__(self) -> str:
        return f"<candidate {self._name}>"


def proxy(judge: Judge, child: Child, name: str) -> _Proxy:
    """The candidate's top-level `name` as test code sees it."""
    return _Proxy(judge, child, name)


def rebind_proxies(judge: Judge, scope: dict[str, Any], child: Child) -> None:
    """Point every proxy in `scope` at `child`, a fresh solution process."""
    for name, value in list(scope.items()):
        if isinstance(value, _Proxy):
            scope[name] = _Proxy(judge, child, name)
