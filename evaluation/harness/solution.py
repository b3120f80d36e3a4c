"""The solution's side of a run: a process forked from the pristine agent, so it
holds no test and no expected value, that loads the candidate and answers the
judge. Whatever the candidate does here, only plain data goes back."""

from __future__ import annotations

import io
import os
import socket
import sys
import time
import traceback
import types
from typing import Any

from . import codec, protocol

SOLUTION_MODULE = "solution"


def _describe(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)[:2000]}


def _load(source: str) -> types.ModuleType:
    module = types.ModuleType(SOLUTION_MODULE)
    module.__file__ = os.path.abspath("solution.py")
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


def serve_calls(chan: socket.socket, source: str) -> None:
    """Load the candidate, then answer {"call"|"get"} requests until the judge hangs up."""
    fd = chan.fileno()
    try:
        module = _load(source)
    except MemoryError:
        protocol.send(fd, {"loaded": False, "memory": True})
        return
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import...
        protocol.send(fd, {"loaded": False, "error": _describe(exc), "traceback": traceback.format_exc(limit=5)})
        return
    protocol.send(fd, {"loaded": True})
    while True:
        try:
            request = protocol.receive(fd)
        except protocol.ChannelClosed:
            _hang_up()
            return
        reply: dict[str, Any] = {"id": request.get("id")}
        try:
            target = getattr(module, request["name"])
            if request["op"] == "get":
                value = target
            else:
                args = codec.decode(request["args"])
                kwargs = codec.decode(request["kwargs"])
                value = target(*args, **kwargs)
            reply["value"] = codec.encode(value)
        except codec.NotPlainData as exc:
            reply["not_data"] = str(exc)
        except MemoryError:
            reply["memory"] = True
        except RecursionError as exc:
            reply["raised"] = _describe(exc)
        except BaseException as exc:  # the candidate's own exceptions, SystemExit included
            reply["raised"] = _describe(exc)
        protocol.send(fd, reply)


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
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
    finally:
        os._exit(code)


class _ReportPlugin:
    """Streams pytest's own collection and reports to the judge as they happen."""

    def __init__(self, fd: int, seed: int) -> None:
        self.fd = fd
        self.seed = seed

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        import random

        random.Random(self.seed).shuffle(items)
        protocol.send(self.fd, {"collected": [item.nodeid for item in items]})

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            protocol.send(self.fd, {"collect_error": report.nodeid, "message": str(report.longrepr)[-2000:]})

    def pytest_runtest_logreport(self, report: Any) -> None:
        message = "" if report.passed else str(report.longrepr)[-2000:]
        protocol.send(
            self.fd,
            {
                "test": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "duration": report.duration,
                "message": message,
                "xfail": bool(getattr(report, "wasxfail", False)),
            },
        )

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        protocol.send(self.fd, {"finished": int(exitstatus)})


def run_pytest(chan: socket.socket, source: str, seed: int) -> None:
    fd = chan.fileno()
    test_source = protocol.receive(fd)["test_module"]
    with open("solution.py", "w", encoding="utf-8") as handle:
        handle.write(source)
    with open("test_suite.py", "w", encoding="utf-8") as handle:
        handle.write(test_source)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.path.insert(0, os.getcwd())
    import pytest

    started = time.monotonic()
    args = [
        "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--noconftest",
        "-c", os.devnull, "--rootdir", os.getcwd(), "-o", "python_files=test_suite.py",
        "test_suite.py",
    ]  # fmt: skip
    try:
        pytest.main(args, plugins=[_ReportPlugin(fd, seed)])
    except BaseException:
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    del started
    os._exit(0)
