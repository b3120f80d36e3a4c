"""Light stand-ins for the few standard-library modules the harness needs at start-up.

A cold sandbox (one run, then gone) pays for every import before the candidate
runs. `json`, `socket`, `signal`, `threading` and `ctypes` each pull in `enum`,
`re`, `functools` or `collections`, some 40 ms in all inside bwrap, for a
handful of functions. The C modules beneath them (`_json`, `_socket`,
`_thread`, `_ctypes`) cost well under a millisecond, so the harness talks to
those, through this module. Behaviour is the standard one: the JSON that
`dumps` writes is what `json.dumps` writes with compact separators, and
`loads` accepts exactly what `json.loads` accepts.
"""

from __future__ import annotations

import _socket
import _thread
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- JSON ------------------------------------------------------------------------------------

try:
    import _json
except ImportError:  # not CPython: the plain module, at its usual cost
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _not_serialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _ScannerContext:
    """The attributes `_json.make_scanner` reads: json.loads's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict = {}


if _json is not None:
    _scan = _json.make_scanner(_ScannerContext())


def dumps(value: Any, *, allow_nan: bool = True) -> str:
    """`json.dumps(value, separators=(",", ":"), allow_nan=allow_nan)`."""
    if _json is None:
        import json

        return json.dumps(value, separators=(",", ":"), allow_nan=allow_nan)
    # A fresh encoder (about a microsecond) each call, as json.dumps makes: its cycle
    # markers are left behind when encoding fails, and a shared encoder then kept the
    # failed value alive and called that same list "circular" when it was sent again.
    encoder = _json.make_encoder(
        {}, _not_serialisable, _json.encode_basestring_ascii, None, ":", ",", False, False, allow_nan
    )
    return "".join(encoder(value, 0))


def loads(data: bytes | bytearray | str) -> Any:
    """`json.loads(data)` for UTF-8 input; a ValueError says what is wrong and where."""
    if _json is None:
        import json

        return json.loads(data)
    if isinstance(data, (bytes, bytearray)):
        # As json.loads decodes UTF-8 bytes: a leading byte order mark is skipped, and
        # a lone surrogate encoded as UTF-8 bytes is kept (surrogatepass), not refused.
        text = data.decode("utf-8", "surrogatepass")
        if text.startswith("\ufeff"):
            text = text[1:]
    else:
        text = data
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"Expecting value at char {exc.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data at char {end}")
    return value


# -- sockets ---------------------------------------------------------------------------------

Socket = _socket.socket
AF_UNIX, SOCK_STREAM, SOCK_SEQPACKET = _socket.AF_UNIX, _socket.SOCK_STREAM, _socket.SOCK_SEQPACKET
_SOL_SOCKET, _SCM_RIGHTS = _socket.SOL_SOCKET, _socket.SCM_RIGHTS
_INT = struct.calcsize("i")


def socketpair(kind: int = SOCK_STREAM) -> tuple[Socket, Socket]:
    return _socket.socketpair(AF_UNIX, kind, 0)


def send_fds(sock: Socket, buffers: list[bytes], fds: list[int]) -> int:
    """`socket.send_fds`: the buffers, with the descriptors passed along (SCM_RIGHTS)."""
    ancillary = [(_SOL_SOCKET, _SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
    return sock.sendmsg(buffers, ancillary)


def recv_fds(sock: Socket, bufsize: int, maxfds: int) -> tuple[bytes, list[int], int, Any]:
    """`socket.recv_fds`: (data, descriptors, flags, address)."""
    data, ancillary, flags, address = sock.recvmsg(bufsize, _socket.CMSG_LEN(maxfds * _INT))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
            whole = len(payload) - len(payload) % _INT
            fds.extend(struct.unpack(f"{whole // _INT}i", payload[:whole]))
    return data, fds, flags, address


# -- threads ---------------------------------------------------------------------------------

Lock = _thread.allocate_lock


def start_thread(target: Any, *args: Any) -> None:
    """A daemon thread: nothing waits for it at exit."""
    _thread.start_new_thread(target, args)


class Event:
    """`threading.Event`: set once, waited for with an optional timeout."""

    def __init__(self) -> None:
        self._flag = False
        self._guard = _thread.allocate_lock()
        self._gate = _thread.allocate_lock()
        self._gate.acquire()  # held until set: waiters block on it

    def set(self) -> None:
        with self._guard:
            if not self._flag:
                self._flag = True
                self._gate.release()

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        wait_s = -1 if timeout is None else min(max(0.0, timeout), _thread.TIMEOUT_MAX)
        if self._gate.acquire(True, wait_s):
            self._gate.release()  # let the next waiter through too
        return self._flag


# -- libc ------------------------------------------------------------------------------------

_libc_functions: dict[tuple[str, tuple[str, ...]], Any] = {}


def libc(name: str, *argtypes: str) -> Any:
    """A libc function through `_ctypes` (the `ctypes` package costs ~4 ms), returning
    an int. Argument types by letter: "i" int, "L" unsigned long, "z" bytes or None."""
    function = _libc_functions.get((name, argtypes))
    if function is not None:
        return function
    import _ctypes

    class _Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = _c_type("i")

    class _Process:  # what a CFuncPtr looks its symbol up in: this process's own symbols
        _handle = _ctypes.dlopen(None, _ctypes.RTLD_LOCAL)

    function = _Function((name, _Process()))
    function.argtypes = tuple(_c_type(letter) for letter in argtypes)
    _libc_functions[(name, argtypes)] = function
    return function


_c_types: dict[str, Any] = {}


def _c_type(letter: str) -> Any:
    if letter not in _c_types:
        import _ctypes

        _c_types[letter] = type(f"_C_{letter}", (_ctypes._SimpleCData,), {"_type_": letter})
    return _c_types[letter]


def check(returned: int, what: str) -> None:
    """Raise OSError with the call's errno when a libc call returned -1."""
    if returned == -1:
        import _ctypes

        raise OSError(_ctypes.get_errno(), f"{what} failed")


def prctl(option: int, value: int) -> None:
    """prctl(2) with one argument."""
    check(libc("prctl", "i", "L", "L", "L", "L")(option, value, 0, 0, 0), f"prctl({option})")
