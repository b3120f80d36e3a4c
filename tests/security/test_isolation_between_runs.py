"""Two runs in one warm sandbox: nothing the first leaves reaches the second.

Run A mutates what it can (files, environment, modules, builtins, processes),
then run B, in the same sandbox (a pool of one), looks for each trace. B's
test passes only if it finds none, and B must see what a run in a freshly
started sandbox sees.

Never execute these programs any other way than through the engine.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import RunRequest, RunResult

from .cases import LIMITS, PASSED
from .conftest import BACKENDS, require_backend

CHECK_DONE = "def check(probe):\n    got = probe()\n    assert got == 'done', got\n"
CHECK_NO_LEAK = "def check(probe):\n    leaks = probe()\n    assert leaks == [], leaks\n"


def request(source: str, check: str) -> RunRequest:
    tests = {"visible": [check], "hidden": []}
    return RunRequest("check_function", textwrap.dedent(source), tests, entry_point="probe", limits=LIMITS)


def describe(result: RunResult) -> str:
    tests = "; ".join(f"{t.name}: {t.outcome} {t.message[:300]!r}" for t in result.tests)
    return f"status={result.status} anomaly={result.anomaly} message={result.message[:500]!r} tests=[{tests}]"


@pytest.fixture(scope="module")
def single_pools() -> Iterator[Callable[[str], SandboxPool]]:
    made: dict[str, SandboxPool] = {}

    def get(backend: str) -> SandboxPool:
        if backend not in made:
            require_backend(backend)
            made[backend] = SandboxPool(engine.sandbox_factory(backend), size=1)
        return made[backend]

    yield get
    for pool in made.values():
        pool.close()


def run_in_one_sandbox(pool: SandboxPool, backend: str, a: RunRequest, b: RunRequest) -> RunResult:
    first = engine.run(a, backend=backend, pool=pool)
    assert str(first.status) == PASSED, f"run A did not do its mischief: {describe(first)}"
    second = engine.run(b, backend=backend, pool=pool)
    assert first.attempts == second.attempts == 1, "a run was retried: the sandbox was not reused"
    assert first.sandbox_id and first.sandbox_id == second.sandbox_id, "A and B ran in different sandboxes"
    return second


# -- one channel at a time --------------------------------------------------------------------------


CHANNELS: dict[str, tuple[str, str]] = {
    "scratch_file": (
        """
        import os

        def probe():
            for path in ("leak.txt", "/scratch/leak.txt", os.path.join(os.environ["TMPDIR"], "leak2.txt")):
                with open(path, "w") as handle:
                    handle.write("A was here")
            os.makedirs("/scratch/leakdir/deeper", exist_ok=True)
            return "done"
        """,
        """
        import os

        def probe():
            paths = ["leak.txt", "/scratch/leak.txt", os.path.join(os.environ["TMPDIR"], "leak2.txt")]
            paths.append("/scratch/leakdir")
            return [path for path in paths if os.path.exists(path)] + os.listdir(".")
        """,
    ),
    "environment_variable": (
        """
        import os

        def probe():
            os.environ["LEAKED_BY_A"] = "1"
            os.putenv("LEAKED_BY_A_PUTENV", "1")
            return "done"
        """,
        """
        import os

        def probe():
            return [name for name in os.environ if name.startswith("LEAKED_BY_A")]
        """,
    ),
    "modules_and_builtins": (
        # Stealthy patches: A's own process must still answer (the harness in it uses
        # len, isinstance and json), so the replacements behave like the originals.
        """
        import builtins
        import collections
        import math
        import random
        import statistics
        import string
        import sys
        import types

        def probe():
            real_len, real_isinstance = len, isinstance
            math.pi = 3
            sys.modules["evil"] = types.ModuleType("evil")
            builtins.len = lambda obj: real_len(obj)
            builtins.__dict__["isinstance"] = lambda obj, cls: real_isinstance(obj, cls)
            builtins.LEAKED_BY_A = True
            statistics.mean = lambda data: 42
            string.ascii_letters = "rigged"
            collections.Counter = dict
            random.seed = lambda *args, **kwargs: None
            sys.path.insert(0, "/scratch/evil")
            sys.setrecursionlimit(50)
            return "done"
        """,
        """
        import builtins
        import collections
        import math
        import random
        import statistics
        import string
        import sys

        def probe():
            leaks = []
            if math.pi != 3.141592653589793:
                leaks.append("math.pi")
            if "evil" in sys.modules:
                leaks.append("sys.modules['evil']")
            for name in ("len", "isinstance"):
                if type(getattr(builtins, name)).__name__ != "builtin_function_or_method":
                    leaks.append(f"builtins.{name}")
            if hasattr(builtins, "LEAKED_BY_A"):
                leaks.append("builtins.LEAKED_BY_A")
            if statistics.mean([1, 3]) != 2:
                leaks.append("statistics.mean")
            if string.ascii_letters != string.ascii_lowercase + string.ascii_uppercase:
                leaks.append("string.ascii_letters")
            if collections.Counter is dict:
                leaks.append("collections.Counter")
            if type(random.seed).__name__ == "function" and random.seed.__module__ != "random":
                leaks.append("random.seed")
            if "/scratch/evil" in sys.path:
                leaks.append("sys.path")
            if sys.getrecursionlimit() == 50:
                leaks.append("recursion limit")
            return leaks
        """,
    ),
    "background_process": (
        """
        import os
        import subprocess
        import time

        def probe():
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            subprocess.Popen(["/usr/bin/sleep", "31"], start_new_session=True, **quiet)
            child = os.fork()
            if child == 0:
                os.setsid()
                if os.fork() == 0:
                    os.closerange(0, 1024)
                    os.execv("/usr/bin/sleep", ["sleep", "32"])
                os._exit(0)
            os.waitpid(child, 0)
            time.sleep(0.05)
            return "done"
        """,
        """
        import os

        def probe():
            found = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        command = handle.read().replace(b"\\0", b" ").decode().strip()
                except OSError:
                    continue
                if "sleep" in command:
                    found.append(command)
            return found
        """,
    ),
    "tmp_file": (
        """
        def probe():
            try:
                with open("/tmp/leak.txt", "w") as handle:
                    handle.write("A was here")
            except OSError:
                pass  # nothing written, nothing to leak
            return "done"
        """,
        """
        import os

        def probe():
            return os.listdir("/tmp")
        """,
    ),
    "root_file": (
        """
        def probe():
            try:
                with open("/leak-root.txt", "w") as handle:
                    handle.write("A was here")
            except OSError:
                pass  # nothing written, nothing to leak
            return "done"
        """,
        """
        import os

        def probe():
            return [name for name in os.listdir("/") if name.startswith("leak")]
        """,
    ),
    "dev_shm_file": (
        """
        def probe():
            try:
                with open("/dev/shm/leak.txt", "w") as handle:
                    handle.write("A was here")
            except OSError:
                pass  # nothing written, nothing to leak
            return "done"
        """,
        """
        import os

        def probe():
            return os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
        """,
    ),
    "dev_file": (
        """
        def probe():
            try:
                with open("/dev/leak.txt", "w") as handle:
                    handle.write("A was here")
            except OSError:
                pass  # nothing written, nothing to leak
            return "done"
        """,
        """
        import os

        def probe():
            return [name for name in os.listdir("/dev") if name.startswith("leak")]
        """,
    ),
}

# Channels a run has been seen to leak through, backend -> channel -> why (strict xfail).
# Empty: the agent wipes /scratch, /tmp and /dev/shm, and bwrap's root is read-only.
KNOWN_LEAKS: dict[str, dict[str, str]] = {}


def _channel_params() -> list[Any]:
    params = []
    for backend in BACKENDS:
        for channel in CHANNELS:
            reason = KNOWN_LEAKS.get(backend, {}).get(channel)
            marks = [getattr(pytest.mark, backend)]
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(backend, channel, id=f"{backend}-{channel}", marks=marks))
    return params


@pytest.mark.parametrize(("backend", "channel"), _channel_params())
def test_nothing_leaks_from_one_run_to_the_next(
    backend: str, channel: str, single_pools: Callable[[str], SandboxPool]
) -> None:
    pool = single_pools(backend)
    mischief, probe = CHANNELS[channel]
    second = run_in_one_sandbox(pool, backend, request(mischief, CHECK_DONE), request(probe, CHECK_NO_LEAK))
    assert str(second.status) == PASSED, f"run B found what run A left ({channel}): {describe(second)}"


# -- the whole state, against a fresh sandbox's ----------------------------------------------------

STATE = """
import builtins
import hashlib
import json
import math
import os
import random
import resource
import sys


BUILTIN = "builtin_function_or_method"


def probe():
    processes = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    processes.append(handle.read().replace(b"\\0", b" ").decode().strip())
            except OSError:
                processes.append("?")
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")}
    state = {
        "cwd": os.getcwd(),
        "cwd_entries": sorted(os.listdir(".")),
        "scratch": sorted(os.listdir("/scratch")),
        "root": sorted(os.listdir("/")),
        "tmp": sorted(os.listdir("/tmp")),
        "dev_shm": sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else None,
        "dev": sorted(os.listdir("/dev")),
        "environ": dict(sorted(os.environ.items())),
        "modules": hashlib.sha256(" ".join(sorted(sys.modules)).encode()).hexdigest(),
        "module_count": len(sys.modules),
        "sys_path": list(sys.path),
        "pi": math.pi,
        "builtins": sorted(name for name, value in vars(builtins).items() if type(value).__name__ == BUILTIN),
        "random": random.random(),
        "processes": sorted(processes),
        "rlimits": limits,
        "fds": sorted(os.listdir("/proc/self/fd")),
        "hostname": os.uname().nodename,
    }
    mask = os.umask(0o022)
    os.umask(mask)
    state["umask"] = mask
    print("STATE " + json.dumps(state, sort_keys=True), flush=True)
    return "done"
"""

MISCHIEF = """
import builtins
import math
import os
import subprocess
import sys
import types


def probe():
    with open("leak.txt", "w") as handle:
        handle.write("A was here")
    os.makedirs("/scratch/leakdir", exist_ok=True)
    os.environ["LEAKED_BY_A"] = "1"
    math.pi = 3
    sys.modules["evil"] = types.ModuleType("evil")
    real_len = len
    builtins.len = lambda obj: real_len(obj)  # stealthy: this process must still answer
    os.umask(0)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.Popen(["/usr/bin/sleep", "33"], start_new_session=True, **quiet)
    return "done"
"""


def _state(result: RunResult) -> dict[str, Any]:
    assert str(result.status) == PASSED, describe(result)
    lines = [line for line in result.stdout.splitlines() if line.startswith("STATE ")]
    assert lines, f"the probe printed no state: {result.stdout[-500:]!r}"
    return json.loads(lines[-1][len("STATE ") :])


@pytest.mark.parametrize("backend", [pytest.param(b, marks=getattr(pytest.mark, b)) for b in BACKENDS])
def test_second_run_sees_what_a_fresh_sandbox_sees(backend: str) -> None:
    """The /tmp, / and /dev/shm leaks are left out of A's mischief here (the tests
    above pin them): everything else must look as it does in a new sandbox."""
    require_backend(backend)
    probe = request(STATE, CHECK_DONE)
    fresh_pool = SandboxPool(engine.sandbox_factory(backend), size=1)
    reused_pool = SandboxPool(engine.sandbox_factory(backend), size=1)
    try:
        fresh = _state(engine.run(probe, backend=backend, pool=fresh_pool))
        reused = _state(run_in_one_sandbox(reused_pool, backend, request(MISCHIEF, CHECK_DONE), probe))
    finally:
        fresh_pool.close()
        reused_pool.close()
    differences = {key: (fresh.get(key), reused.get(key)) for key in fresh.keys() | reused.keys()}
    differences = {key: pair for key, pair in differences.items() if pair[0] != pair[1]}
    assert not differences, f"after run A, run B differs from a fresh sandbox's first run: {differences}"
