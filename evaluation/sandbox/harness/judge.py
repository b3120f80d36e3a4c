"""The judge: the only process of a run that reads the tests and holds expected
values. It starts solution processes through the agent, talks to them with
plain data, and decides each test's outcome outside the solution's reach."""

from __future__ import annotations

import os
import select
import time

from . import codec, lite, names, protocol, resources

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

OUTCOME_PASSED, OUTCOME_FAILED, OUTCOME_ERROR, OUTCOME_SKIPPED = "passed", "failed", "error", "skipped"
SCRATCH_FOR_JUDGE = os.environ.get("HARNESS_SCRATCH", "/scratch")
# A failure of the candidate that ends the whole run rather than one test.
FATAL = {"timeout": "timeout", "memory": "memory_exceeded", "output": "output_exceeded"}


class CandidateFailure(Exception):
    """The candidate did not produce a value: it raised, exited, returned something
    that is not plain data, ran out of time or memory, or flooded its output."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ChannelLost(BaseException):
    """The zygote is gone or stuck: the sandbox is broken for this run. A BaseException,
    so the handlers that turn test errors into outcomes never swallow it."""


class SuiteProblem(Exception):
    """The test suite itself cannot run as written (not the candidate's fault)."""


class Capture:
    """One output pipe of a solution process, of which the first `cap` bytes are
    kept. The collector thread reads it; `join` waits for its end."""

    def __init__(self, fd: int, cap: int, on_exceeded: Any) -> None:
        self.fd, self.cap, self.on_exceeded = fd, cap, on_exceeded
        self.kept = bytearray()
        self.total = 0
        self.done = lite.Event()

    def feed(self) -> bool:
        """Read what is there; False once the pipe has ended or overflowed."""
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        self.total += len(chunk)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        if self.total > self.cap:
            self.on_exceeded()
            return False
        return True

    def finish(self) -> None:
        os.close(self.fd)
        self.done.set()

    def join(self, timeout: float | None = None) -> None:
        self.done.wait(timeout)

    def is_alive(self) -> bool:
        return not self.done.is_set()

    @property
    def exceeded(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


class Collector:
    """One thread, for the judge's whole life, that drains every solution process's
    output pipes: cheaper than starting reader threads for each process."""

    def __init__(self) -> None:
        self.lock = lite.Lock()
        self.captures: dict[int, Capture] = {}
        self.wake_r, self.wake_w = os.pipe()
        self.poller = select.poll()
        self.poller.register(self.wake_r, select.POLLIN)

    def add(self, *captures: Capture) -> None:
        with self.lock:
            for capture in captures:
                self.captures[capture.fd] = capture
                self.poller.register(capture.fd, select.POLLIN)
        os.write(self.wake_w, b"+")

    def run(self) -> None:
        while True:
            for fd, _events in self.poller.poll():
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    continue
                with self.lock:
                    capture = self.captures.get(fd)
                if capture is None or capture.feed():
                    continue
                with self.lock:
                    del self.captures[fd]
                    self.poller.unregister(fd)
                capture.finish()


_collector: Collector | None = None


def collector() -> Collector:
    global _collector
    if _collector is None:
        _collector = Collector()
        lite.start_thread(_collector.run)
    return _collector


class Child:
    def __init__(self, pid: int, chan: lite.Socket | None, out: Capture, err: Capture) -> None:
        self.pid, self.chan, self.out, self.err = pid, chan, out, err
        self.exit: dict[str, Any] | None = None
        self.seq = 0


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


def _exception_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _setup_traceback(exc: BaseException, setup: str) -> str:
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
    return (text + _exception_line(exc))[-4000:]


def shuffled(items: list[Any], seed: int) -> list[Any]:
    """`items` in an order fixed by `seed` (Fisher-Yates over splitmix64): the same on
    every Python, and without importing `random` (~4 ms in a cold sandbox)."""
    mask = (1 << 64) - 1
    state = seed & mask
    items = list(items)
    for i in range(len(items) - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        j = z % (i + 1)
        items[i], items[j] = items[j], items[i]
    return items


class Judge:
    def __init__(self, ctl: lite.Socket, run: dict[str, Any], tests: dict[str, Any]) -> None:
        self.ctl = ctl
        self.ctl_lock = lite.Lock()
        self.run_spec = run
        self.tests = tests
        self.limits = run["limits"]
        self.deadline = time.monotonic() + float(self.limits["wall_s"])
        self.output_cap = int(self.limits["output_bytes"])
        self.children: list[Child] = []
        self.outcomes: list[dict[str, Any]] = []
        self.fatal: str | None = None
        self.started = time.monotonic()
        self.marks: dict[str, float] = {}
        # A fatal failure (timeout, memory, output) raised inside code that catches
        # exceptions (pytest does) is remembered here so it still ends the run.
        self.fatal_failure: CandidateFailure | None = None
        self.remotes: dict[tuple[int, int], RemoteObject] = {}
        self.comparing: set[tuple[int, int]] = set()
        self.setup_error = ""

    def mark(self, name: str) -> None:
        self.marks[name] = round((time.monotonic() - self.started) * 1000, 3)

    # -- talking to the agent -------------------------------------------------------------

    def _ctl_send(self, message: dict[str, Any], fds: list[int] = ()) -> None:
        with self.ctl_lock:
            lite.send_fds(self.ctl, [lite.dumps(message).encode()], list(fds))

    def _ctl_receive(self, timeout: float) -> dict[str, Any] | None:
        ready, _, _ = select.select([self.ctl], [], [], max(0.0, timeout))
        if not ready:
            return None
        data = self.ctl.recv(65536)
        if not data:
            raise ChannelLost("the zygote closed its control channel")
        return lite.loads(data)

    def _wait_for(self, predicate: Any, timeout: float) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while True:
            message = self._ctl_receive(end - time.monotonic())
            if message is None:
                return None
            if message.get("op") == "exited":
                for child in self.children:
                    if child.pid == message["pid"]:
                        child.exit = message
            if predicate(message):
                return message

    def _start_capture(self, child: Child, out_r: int, err_r: int) -> None:
        child.out = Capture(out_r, self.output_cap, lambda: self._output_exceeded(child))
        child.err = Capture(err_r, self.output_cap, lambda: self._output_exceeded(child))
        collector().add(child.out, child.err)
        self.children.append(child)

    def spawn(self, mode: str, *, stdin: bool = False) -> Child:
        """Ask the zygote for a fresh solution process wired to new pipes of ours."""
        ours, theirs = [], []
        chan = None
        if mode == "calls":
            chan, child_end = lite.socketpair()
            theirs.append(child_end.fileno())
            ours.append(child_end)
        if stdin:
            read_end, write_end = os.pipe()
            theirs.append(read_end)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        source_r, source_w = os.pipe()
        theirs += [out_w, err_w, source_r]
        self._ctl_send({"op": "spawn", "mode": mode}, theirs)
        for fd in theirs:
            if not (chan is not None and fd == ours[0].fileno()):
                os.close(fd)
        for sock in ours:
            sock.close()
        source = self.run_spec["solution"].encode("utf-8", errors="replace")
        if len(source) < 60_000:  # fits the pipe's buffer: no reader needed yet
            _feed(source_w, source)
        else:
            lite.start_thread(_feed, source_w, source)
        reply = self._wait_for(lambda m: m.get("op") == "spawned", 10.0)
        if reply is None:
            raise ChannelLost("the zygote did not start a solution process")
        child = Child(reply["pid"], chan, None, None)  # type: ignore[arg-type]
        child.stdin_fd = write_end if stdin else None  # type: ignore[attr-defined]
        self._start_capture(child, out_r, err_r)
        return child

    def kill(self, child: Child) -> None:
        if child.exit is None:
            self._ctl_send({"op": "kill", "pid": child.pid})

    def _output_exceeded(self, child: Child) -> None:
        self.kill(child)

    def reap(self, child: Child, timeout: float = 5.0) -> dict[str, Any]:
        if child.exit is None:
            self._wait_for(lambda m: m.get("op") == "exited" and m.get("pid") == child.pid, timeout)
        return child.exit or {"code": None, "signal": None}

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    # -- calls into the candidate -----------------------------------------------------------

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

    def request(self, child: Child, message: dict[str, Any]) -> dict[str, Any]:
        if child.chan is None or child.exit is not None:
            raise self._failure_from_exit(child)
        child.seq += 1
        message["id"] = child.seq
        fd = child.chan.fileno()
        try:
            protocol.send(fd, message)
        except OSError:
            raise self._failure_from_exit(child) from None
        ready, _, _ = select.select([fd], [], [], max(0.0, self.remaining()))
        if not ready:
            self.kill(child)
            raise CandidateFailure("timeout", f"no answer within the {self.limits['wall_s']} s wall-time limit")
        reply = self.receive_from(child)
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

    def receive_from(self, child: Child) -> Any:
        """A frame from the candidate, read against the wall-time deadline: it may
        close, corrupt or stall its channel, and each of those is its failure."""
        try:
            return protocol.receive(child.chan.fileno(), deadline=self.deadline)
        except protocol.ChannelClosed:
            raise self._failure_from_exit(child) from None
        except protocol.ChannelTimeout:
            self.kill(child)
            raise CandidateFailure("timeout", "the candidate stalled mid-answer past the wall-time limit") from None
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
            raise _mirror(what, reply["raised"])
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

    # -- running a suite -----------------------------------------------------------------------

    def record(self, name: str, outcome: str, message: str, started: float) -> None:
        self.outcomes.append(
            {"name": name, "outcome": outcome, "message": message[:2000], "duration_s": time.monotonic() - started}
        )

    def named_tests(self) -> list[tuple[str, Any]]:
        items = [(f"visible[{i}]", t) for i, t in enumerate(self.tests.get("visible") or [])]
        items += [(f"hidden[{i}]", t) for i, t in enumerate(self.tests.get("hidden") or [])]
        return shuffled(items, int(self.run_spec["seed"]))

    def run(self) -> dict[str, Any]:
        kind = self.run_spec["kind"]
        try:
            if kind == "stdio":
                self.run_stdio()
            elif kind == "pytest":
                self.run_pytest()
            else:
                self.run_calls(kind)
        except CandidateFailure as exc:
            self.fatal = FATAL.get(exc.kind, "failed")
            self.message = str(exc)
        finally:
            self.mark("suite_done")
            self.drain()
            self.mark("drained")
        return self.report()

    def drain(self) -> None:
        """End every solution process and read all it wrote, so the output limit is
        judged on everything written, not on how far a reader thread had got."""
        # One round trip to the zygote before the verdict goes out: a run that killed or
        # stopped it must not pass for one this sandbox can vouch for (nor leave a broken
        # sandbox in the pool for the next run to fail on). Asked first, so the zygote
        # answers while the solution processes hang up; the answer is awaited below.
        self._ctl_send({"op": "ping"})
        for child in self.children:
            if child.chan is not None:
                child.chan.close()  # end of input: a serving candidate exits
        end = time.monotonic() + 1.0
        for child in self.children:
            for capture in (child.out, child.err):
                capture.join(max(0.0, end - time.monotonic()))
        for child in self.children:
            if child.out.is_alive() or child.err.is_alive():
                self.kill(child)
                child.out.join(2.0)
                child.err.join(2.0)
        for child in self.children:  # a serving process lingers after hanging up: measure it there
            if child.exit is None and child.chan is not None:
                child.exit = resources.lingering_usage(child.pid)
        if self._wait_for(lambda m: m.get("op") == "pong", 0.5) is None:
            raise ChannelLost("the zygote did not answer after the run")
        end = time.monotonic() + 0.5
        for child in self.children:  # each exits on its own once its input ends; note how
            if child.exit is None:
                try:
                    self._wait_for(lambda m, pid=child.pid: m.get("op") == "exited" and m.get("pid") == pid,
                                   max(0.0, end - time.monotonic()))  # fmt: skip
                except ChannelLost:
                    break
        if self.fatal is None and any(c.out.exceeded or c.err.exceeded for c in self.children):
            self.fatal = "output_exceeded"
            self.message = f"the candidate wrote more than {self.output_cap} bytes of output"

    def load(self) -> Child:
        child = self.spawn("calls")
        fd = child.chan.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, self.remaining()))
        if not ready:
            self.kill(child)
            raise CandidateFailure("timeout", "loading the solution took longer than the wall-time limit")
        loaded = self.receive_from(child)
        self.mark("loaded")
        if not isinstance(loaded, dict):
            self.kill(child)
            raise CandidateFailure("exited", "the candidate corrupted its channel while loading")
        if loaded.get("memory"):
            raise CandidateFailure("memory", "the candidate ran out of memory while loading")
        if loaded.get("loaded") is not True:
            error = loaded.get("error") if isinstance(loaded.get("error"), dict) else {}
            self.load_error = f"{error.get('type')}: {error.get('message')}\n{loaded.get('traceback', '')}"
            raise LoadError(self.load_error)
        return child

    def namespace(self, child: Child) -> dict[str, Any]:
        """The names test code sees: the modules and names the candidate imports at top
        level (the judge's own copies, standard library only), the candidate's top-level
        functions, classes and plain values (as proxies), then the suite's setup. A
        candidate's name that shadows a builtin is left out (the entry point aside):
        otherwise a solution defining `abs` or `len` would rewrite the tests' own
        arithmetic. The setup runs last, so what the tests define is theirs."""
        import builtins

        callables, values = top_level_names(self.run_spec["solution"])
        shadowing = set(vars(builtins)) - {self.run_spec.get("entry_point") or ""}
        callables, values = callables - shadowing, values - shadowing
        names: dict[str, Any] = {"__name__": "__judge__"}
        names.update(self.imported())
        for name in callables:
            names[name] = _proxy(self, child, name)
        for name in values:
            try:
                names[name] = self.get(child, name)
            except Exception:  # noqa: S110 - it raised at access: a test that needs it fails on the NameError
                pass
        setup = self.tests.get("setup") or ""
        if setup:
            exec(compile(setup, SETUP_FILENAME, "exec"), names)  # noqa: S102 - the curator's test code
        return names

    def imported(self, wanted: Any = None) -> dict[str, Any]:
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

        source = self.run_spec["solution"]
        if wanted is None:
            text = self.tests_text()
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

    def tests_text(self) -> str:
        parts = [self.tests.get("setup") or ""]
        parts += [t for t in (self.tests.get("visible") or []) + (self.tests.get("hidden") or []) if isinstance(t, str)]
        return "\n".join(parts)

    def setup_failed(self, exc: BaseException) -> None:
        """The suite's setup raised: every test fails with its traceback, and the record
        says so (setup_error), for the verification to tell a broken task (its
        reference fails the same way) from a candidate that broke the setup."""
        self.setup_error = _setup_traceback(exc, self.tests.get("setup") or "")
        candidate_caused = isinstance(exc, (CandidateFailure, CandidateRaised))
        outcome = OUTCOME_FAILED if candidate_caused else OUTCOME_ERROR
        self.message = f"the test setup raised {_exception_line(exc)}"[:2000]
        started = time.monotonic()
        for test_name, _source in self.named_tests():
            self.record(test_name, outcome, f"the test setup failed:\n{self.setup_error}", started)

    def run_calls(self, kind: str) -> None:
        child = self.load()
        try:
            names = self.namespace(child)
        except (Exception, SystemExit) as exc:  # ChannelLost is neither: a broken sandbox is not a verdict
            self.setup_failed(exc)
            if isinstance(exc, CandidateFailure) and exc.kind in FATAL:
                self.setup_error = ""  # it ran out of time or memory: the status says so, nothing raised
                raise
            return
        if self.fatal_failure is not None:  # the setup caught it, but it still ends the run
            self.setup_failed(self.fatal_failure)
            self.setup_error = ""
            raise self.fatal_failure
        entry = self.run_spec.get("entry_point") or ""
        for test_name, source in self.named_tests():
            started = time.monotonic()
            scope = dict(names)
            try:
                if kind == "assertions":
                    exec(compile(source, f"<{test_name}>", "exec"), scope)  # noqa: S102
                else:
                    exec(compile(source, f"<{test_name}>", "exec"), scope)  # noqa: S102
                    check = scope.get("check")
                    if not callable(check):
                        raise SuiteProblem("the test module defines no check(candidate)")
                    check(names.get(entry) or _proxy(self, child, entry))
            except AssertionError as exc:
                self.record(test_name, OUTCOME_FAILED, f"assertion failed: {exc}".rstrip(": "), started)
            except CandidateFailure as exc:
                self.record(test_name, OUTCOME_FAILED, str(exc), started)
                if exc.kind in FATAL:
                    raise
                if child.exit is not None or exc.kind == "exited":
                    child = self._respawn_after_exit(child, names)
            except SuiteProblem as exc:
                self.record(test_name, OUTCOME_ERROR, f"test error: {exc}", started)
            except Exception as exc:  # the test code itself failed (NameError, TypeError, ...)
                self.record(test_name, OUTCOME_ERROR, f"test error: {type(exc).__name__}: {exc}", started)
            else:
                self.record(test_name, OUTCOME_PASSED, "", started)

    def _respawn_after_exit(self, dead: Child, names: dict[str, Any]) -> Child:
        """The candidate exited mid-suite; later tests get a fresh process so that one
        early exit is not mistaken for many failures of the suite's own making."""
        self.reap(dead, 2.0)
        child = self.load()
        for name, value in list(names.items()):
            if isinstance(value, _Proxy):
                names[name] = _proxy(self, child, name)
        return child

    def run_stdio(self) -> None:
        for test_name, case in self.named_tests():
            started = time.monotonic()
            child = self.spawn("program", stdin=True)
            lite.start_thread(_feed, child.stdin_fd, case["input"].encode())
            child.out.join(max(0.0, self.remaining()))
            if child.out.is_alive():
                self.kill(child)
                self.record(test_name, OUTCOME_FAILED, "timed out", started)
                raise CandidateFailure("timeout", f"no output end within the {self.limits['wall_s']} s limit")
            status = self.reap(child)
            child.err.join(1.0)
            if child.out.exceeded or child.err.exceeded:
                self.record(test_name, OUTCOME_FAILED, "output limit exceeded", started)
                raise CandidateFailure("output", f"the program wrote more than {self.output_cap} bytes")
            if status.get("cpu_exceeded"):
                self.record(test_name, OUTCOME_FAILED, "CPU time exceeded", started)
                raise CandidateFailure("timeout", "the program used up its CPU time")
            if status.get("memory_exceeded") or status.get("code") == 86:
                self.record(test_name, OUTCOME_FAILED, "memory exceeded", started)
                raise CandidateFailure("memory", "the program ran out of memory")
            got, expected = _normalise(child.out.text()), _normalise(case["output"])
            if status.get("signal") or status.get("code"):
                how = f"signal {status['signal']}" if status.get("signal") else f"exit code {status.get('code')}"
                self.record(test_name, OUTCOME_FAILED, f"the program ended with {how}", started)
            elif got == expected:
                self.record(test_name, OUTCOME_PASSED, "", started)
            else:
                self.record(test_name, OUTCOME_FAILED, _first_difference(expected, got), started)

    def run_pytest(self) -> None:
        """pytest runs here, in the judge (pytest_judge.py); the candidate only
        answers requests, as for the other kinds."""
        from . import pytest_judge

        child = self.load()
        modules = (self.tests.get("visible") or []) + (self.tests.get("hidden") or [])
        setup = self.tests.get("setup") or ""
        source = "\n\n".join([setup, *modules]) if setup else "\n\n".join(modules)
        plugin = pytest_judge.run_pytest_in_judge(self, child, source, int(self.run_spec["seed"]), SCRATCH_FOR_JUDGE)
        if self.fatal_failure is not None:
            raise self.fatal_failure
        if plugin.collect_errors:
            self.load_error = "collection failed:\n" + "\n".join(plugin.collect_errors)
            raise LoadError(self.load_error)
        for nodeid in plugin.collected:
            entry = plugin.reports.get(nodeid)
            if entry is None or not entry.get("called"):
                outcome = (entry or {}).get("outcome", OUTCOME_FAILED)
                outcome = OUTCOME_FAILED if outcome == OUTCOME_PASSED else outcome
                message = (entry or {}).get("message") or "the test never ran to completion"
                self.outcomes.append({"name": nodeid, "outcome": outcome, "message": message, "duration_s": 0.0})
            else:
                self.outcomes.append({"name": nodeid, "outcome": entry["outcome"], "message": entry["message"][:2000],
                                      "duration_s": entry["duration"]})  # fmt: skip
        if not plugin.collected:
            self.fatal, self.message = "failed", "no test was collected"
        elif not plugin.finished:
            self.fatal, self.message = "failed", "the test session did not finish"

    # -- the record --------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        stdout = "".join(c.out.text() for c in self.children if self.run_spec["kind"] != "stdio")
        stderr = "".join(c.err.text() for c in self.children)
        if self.fatal:
            status = self.fatal
        elif any(o["outcome"] != OUTCOME_PASSED for o in self.outcomes) or not self.outcomes:
            status = "failed"
        else:
            status = "passed"
        return {
            "complete": True,
            "status": status,
            "message": getattr(self, "message", ""),
            "tests": self.outcomes,
            "stdout": stdout,
            "stderr": stderr,
            "output_truncated": any(c.out.exceeded or c.err.exceeded for c in self.children),
            "timings_ms": self.marks,
            # The exits the zygote reported, for the run's accounting; the agent removes these.
            "solution_exits": [c.exit for c in self.children if c.exit],
            "solution_count": len(self.children),
            # The suite's setup raised (its traceback): with a reference, the task is broken.
            "setup_error": self.setup_error,
        }


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


def _mirror(what: str, raised: Any) -> BaseException:
    """The candidate's exception, raised in the judge as its look-alike."""
    details = raised if isinstance(raised, dict) else {}
    text = f"{what} raised {str(details.get('type'))[:100]}: {str(details.get('message', ''))[:2000]}"
    klass = _mirror_class(raised)
    return klass(text) if klass is not None else CandidateFailure("raised", text)


class LoadError(Exception):
    """The solution does not load (syntax error, import error, exception at import)."""


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


def _proxy(judge: Judge, child: Child, name: str) -> _Proxy:
    return _Proxy(judge, child, name)


def _feed(fd: int, data: bytes) -> None:
    try:
        protocol.write_all(fd, data)
    except OSError:
        pass  # the program did not read all its input; that is its business
    finally:
        os.close(fd)


def _normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _first_difference(expected: list[str], got: list[str]) -> str:
    for number, (want, have) in enumerate(zip(expected, got, strict=False), 1):
        if want != have:
            return f"line {number}: expected {want[:200]!r}, got {have[:200]!r}"
    if len(got) < len(expected):
        return f"output ended after {len(got)} line(s); expected {len(expected)}"
    return f"output has {len(got) - len(expected)} extra line(s) after the expected {len(expected)}"


def judge_run(ctl: lite.Socket, run: dict[str, Any], tests: dict[str, Any]) -> dict[str, Any]:
    """Judge one run and return its complete record. ChannelLost propagates: a
    broken sandbox is for the engine to rerun and blame, not a verdict."""
    judge = Judge(ctl, run, tests)
    try:
        return judge.run()
    except LoadError as exc:
        record = judge.report()
        record.update(status="error", message=str(exc)[:4000])
        return record
    except ChannelLost:
        raise
    except Exception:  # a fault of the harness, not of the candidate
        import traceback

        return {"complete": True, "status": "sandbox_error", "message": traceback.format_exc()[-4000:],
                "tests": [], "stdout": "", "stderr": ""}  # fmt: skip
