"""The harness's light stand-ins for json, socket and threading, the seeded shuffle,
and what a cold sandbox imports before the candidate runs."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.harness import lite
from evaluation.sandbox.harness.judge import shuffled
from evaluation.sandbox.types import Limits, RunRequest, Status

HARNESS_DIR = Path(__file__).resolve().parents[2] / "evaluation" / "sandbox" / "harness"


@pytest.fixture(scope="module")
def harness_parent(tmp_path_factory):
    """A directory holding `harness` and nothing else, as / is inside a sandbox: the
    checkout's evaluation/sandbox beside it would shadow the standard library's
    `types` with the engine's."""
    parent = tmp_path_factory.mktemp("harness-parent")
    (parent / "harness").symlink_to(HARNESS_DIR, target_is_directory=True)
    return parent


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-(2**70), 2**70)
    if kind == 3:
        return rng.choice([0.0, -0.0, 1e-310, 1e308, rng.uniform(-1e6, 1e6)])
    if kind in (4, 5):
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x2FFFF)])) for _ in range(6))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_value(rng, 4)): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


@pytest.mark.parametrize("seed", range(200))
def test_dumps_writes_what_json_writes_and_loads_reads_it_back(seed):
    value = _value(random.Random(seed))
    text = lite.dumps(value)
    assert text == json.dumps(value, separators=(",", ":"))
    assert lite.loads(text.encode()) == json.loads(text)


def test_non_finite_floats_follow_allow_nan():
    assert lite.dumps([math.inf, -math.inf]) == "[Infinity,-Infinity]"
    assert math.isnan(lite.loads(b"NaN")) and lite.loads(b" -Infinity\n") == -math.inf
    with pytest.raises(ValueError, match="not JSON compliant"):
        lite.dumps({"x": math.nan}, allow_nan=False)


@pytest.mark.parametrize(
    "bad", [b"", b"   ", b"[1,", b'{"a":1} x', b"nul", b"{'a': 1}", b'"unterminated', b"[1]]", b"\xff\xfe", b'{"a" 1}']
)
def test_loads_rejects_what_json_rejects_with_a_value_error(bad):
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        lite.loads(bad)


def test_dumps_refuses_objects_and_cycles():
    with pytest.raises(TypeError, match="object is not JSON serializable"):
        lite.dumps({"k": object()})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        lite.dumps(loop)


def test_descriptors_cross_a_socket_pair():
    left, right = lite.socketpair(lite.SOCK_SEQPACKET)
    read_end, write_end = os.pipe()
    try:
        lite.send_fds(left, [b"hello"], [read_end, write_end])
        data, fds, _flags, _address = lite.recv_fds(right, 1024, 4)
        assert data == b"hello" and len(fds) == 2
        os.write(fds[1], b"through")
        assert os.read(read_end, 100) == b"through"
        for fd in fds:
            os.close(fd)
    finally:
        for fd in (read_end, write_end):
            os.close(fd)
        left.close()
        right.close()


def test_event_waits_until_set_or_timeout():
    event = lite.Event()
    started = time.monotonic()
    assert event.wait(0.05) is False and time.monotonic() - started >= 0.04
    lite.start_thread(lambda: (time.sleep(0.02), event.set()))
    assert event.wait(5) is True and event.is_set()
    event.set()  # a second set is harmless
    assert event.wait() is True


def test_shuffled_is_a_permutation_fixed_by_the_seed():
    items = list(range(20))
    assert sorted(shuffled(items, 7)) == items
    assert shuffled(items, 7) == shuffled(items, 7)
    assert len({tuple(shuffled(items, seed)) for seed in range(10)}) == 10
    assert items == list(range(20))  # the input is left alone
    assert shuffled([], 3) == [] and shuffled(["only"], 3) == ["only"]


def test_a_cold_agent_starts_without_the_costly_modules(harness_parent):
    """Every module named here costs milliseconds inside bwrap (they pull in enum and
    re), which a one-run sandbox pays before the candidate runs."""
    probe = "import sys, harness.supervisor; print(' '.join(sorted(sys.modules)))"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(harness_parent), "HARNESS_WARM": "0"}
    out = subprocess.run(
        ["/usr/bin/python3", "-S", "-s", "-B", "-P", "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    costly = {"enum", "re", "json", "socket", "threading", "ctypes", "signal", "random", "ast", "functools"}
    assert costly.isdisjoint(out), sorted(costly.intersection(out))


@pytest.mark.bwrap
def test_cold_sandboxes_seed_random_for_the_solution_and_the_tests():
    """A cold sandbox imports `random` only for code that names it, and seeds it then,
    so two cold runs of one request agree (and a warm run with them)."""
    solution = "import random\ndef pick(n):\n    return random.randint(0, 10**9) + n\n"
    tests = ["import random\nassert pick(random.randint(0, 5)) < 0, pick(0)"] * 3
    request = RunRequest(suite_kind="assertions", solution=solution, tests={"hidden": tests}, entry_point="pick",
                         limits=Limits(wall_s=10, cpu_s=10), seed=11)  # fmt: skip
    runs = [engine.run(request, backend="bwrap", warm=False) for _ in range(2)]
    runs.append(engine.run(request, backend="bwrap"))
    assert all(r.status == Status.FAILED for r in runs)
    messages = [[t.message for t in r.tests] for r in runs]
    assert messages[0] == messages[1] == messages[2]
    assert len(set(messages[0])) == 3  # the draws go on from test to test: the generator is seeded, not reset


REHEARSAL = """
import gc, json, os, sys
from harness import supervisor, zygote  # the supervisor loads all a zygote holds

def state():
    gc.collect()
    return sorted(os.listdir("/proc/self/fd")), sorted(sys.modules)

devnull = os.open(os.devnull, os.O_RDONLY)
steps = 0
before = state()
for _ in zygote.rehearse_solution(devnull):
    steps += 1
for stop_after in (1, 2):  # a spare stops where its run's order finds it
    walk = zygote.rehearse_solution(devnull)
    for _ in range(stop_after):
        next(walk)
    walk.close()
garbage = gc.collect()
after = state()
code_files = [getattr(getattr(o, "__code__", None), "co_filename", "") for o in gc.get_objects()]
rehearsed = code_files.count(os.path.abspath("solution.py"))
print(json.dumps({"fds": [before[0], after[0]], "new_modules": sorted(set(after[1]) - set(before[1])),
                  "garbage": garbage, "steps": steps, "rehearsed_functions": rehearsed}))
"""


def test_the_rehearsal_leaves_nothing_behind(tmp_path, harness_parent):
    """A spare walks a run's path before its run (zygote.rehearse_solution), stopping
    where the run's order finds it: no descriptor, module, object or cycle may outlive
    the walk, whole or stopped, or a candidate would find what no fresh process holds."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(harness_parent), "HARNESS_SCRATCH": str(tmp_path)}
    completed = subprocess.run(["/usr/bin/python3", "-S", "-s", "-B", "-P", "-c", REHEARSAL], env=env,
                               capture_output=True, text=True, check=False)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    seen = json.loads(completed.stdout)
    assert seen["fds"][0] == seen["fds"][1]
    assert seen["steps"] == 3  # every step ran (the generator ended on its own)
    assert seen["new_modules"] == [] and seen["garbage"] == 0 and seen["rehearsed_functions"] == 0
