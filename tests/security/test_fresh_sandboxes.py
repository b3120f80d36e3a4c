"""Fresh sandboxes forked from a template (evaluation/sandbox/templates.py).

A cold run, and every rerun after an anomaly, gets one. It must be what a sandbox
started by exec is (no capabilities, its own PID, network, mount, IPC and UTS
namespaces, nothing writable but its own empty tmpfs), it must hold what a warm
sandbox's first run holds, two of them from one template must share nothing, and
nothing in one may reach the template. The hostile programs run against them too
(test_hostile_programs.py, the `bwrap-fresh` variant).

Never execute these programs any other way than through the engine.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.bwrap import BwrapSandbox, sandbox_python
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.templates import ForkedSandbox, SandboxTemplate, shelf

from . import hostcheck
from .cases import PASSED
from .test_isolation_between_runs import CHANNELS, CHECK_DONE, CHECK_NO_LEAK, STATE, _state, describe, request

pytestmark = pytest.mark.bwrap  # fails without bubblewrap, unless TEST_ALLOW_MISSING=bwrap

IDENTITY = """
import os
import socket


def probe():
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    facts = {name: status[name].strip() for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")}
    facts["pids"] = sorted(int(pid) for pid in os.listdir("/proc") if pid.isdigit())
    facts["hostname"] = os.uname().nodename
    facts["interfaces"] = sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:])
    try:
        socket.create_connection(("10.0.0.1", 80), timeout=1)
        facts["outbound"] = "connected"
    except OSError as exc:
        facts["outbound"] = exc.errno
    for place in ("/", "/usr", "/dev", "/harness"):
        try:
            open(os.path.join(place, "sbxhostile-fresh"), "w")
            facts["write " + place] = "written"
        except OSError as exc:
            facts["write " + place] = exc.errno
    # A set: below a fresh sandbox's own /proc, /scratch and /tmp, mountinfo also lists the
    # template's, which its own cover (and which nothing in it can unmount).
    mounts = [line.split() for line in open("/proc/self/mountinfo")]
    facts["writable"] = sorted({
        fields[4] for fields in mounts
        if fields[5].split(",")[0] == "rw" and (fields[4] == "/dev/shm" or not fields[4].startswith("/dev/"))
    })
    facts["scratch"] = sorted(os.listdir("/scratch"))
    print("FACTS", facts, flush=True)
    return "done"
"""

# Run A leaves a process behind in a new session, sleeping past the run.
DAEMON = """
import subprocess


def probe():
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.Popen(["/usr/bin/sleep", "37"], start_new_session=True, **quiet)
    return "done"
"""
NO_DAEMON = """
import os


def probe():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"sleep" in handle.read():
                    found.append(pid)
    return found
"""


def _fresh(source: str, check: str):
    result = engine.run(request(source, check), backend="bwrap", warm=False, cold="fork")
    # The engine falls back to exec when templates fail: make sure this one was forked.
    assert not shelf.unsupported, shelf.unsupported
    _one_idle_template()
    return result


def _facts(result) -> str:
    assert str(result.status) == PASSED, describe(result)
    lines = [line for line in result.stdout.splitlines() if line.startswith("FACTS ")]
    assert lines, result.stdout[-500:]
    return lines[-1]


def _one_idle_template():
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # a cold run hands its template back after the run
        templates = shelf.idle_templates()
        if len(templates) == 1:
            return templates[0]
        time.sleep(0.02)
    raise AssertionError(f"expected one idle template, found {shelf.idle_templates()}")


@pytest.fixture(autouse=True)
def fresh_shelf():
    engine.close_pools()
    yield
    engine.close_pools()


def test_a_fresh_sandbox_is_what_a_sandbox_started_by_exec_is() -> None:
    forked = _facts(_fresh(IDENTITY, CHECK_DONE))
    started = _facts(engine.run(request(IDENTITY, CHECK_DONE), backend="bwrap", warm=False, cold="exec"))
    assert forked == started
    assert "'CapEff': '0000000000000000'" in forked and "'CapBnd': '0000000000000000'" in forked, forked
    assert "'NoNewPrivs': '1'" in forked and "'interfaces': ['lo']" in forked, forked
    assert "'pids': [1, 2, 3]" in forked, forked  # the agent, its zygote, this process: no template
    assert "'writable': ['/dev/shm', '/proc', '/scratch', '/tmp']" in forked, forked


def test_a_fresh_sandbox_holds_what_a_warm_sandboxs_first_run_holds() -> None:
    probe = request(STATE, CHECK_DONE)
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=1)
    try:
        warm = _state(engine.run(probe, backend="bwrap", pool=pool))
    finally:
        pool.close()
    forked = _state(_fresh(STATE, CHECK_DONE))
    differences = {key: (warm.get(key), forked.get(key)) for key in warm.keys() | forked.keys()}
    differences = {key: pair for key, pair in differences.items() if pair[0] != pair[1]}
    assert not differences, f"a fresh sandbox differs from a warm one at its first run: {differences}"


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_two_fresh_sandboxes_from_one_template_share_nothing(channel: str) -> None:
    mischief, probe = CHANNELS[channel]
    first = _fresh(mischief, CHECK_DONE)
    assert str(first.status) == PASSED, describe(first)
    template = _one_idle_template()
    second = _fresh(probe, CHECK_NO_LEAK)
    assert str(second.status) == PASSED, f"a fresh sandbox found what the one before left ({channel}): " + describe(
        second
    )
    assert first.sandbox_id != second.sandbox_id
    assert _one_idle_template() is template, "the second run did not come from the same template"


def test_nothing_a_fresh_sandbox_started_outlives_it() -> None:
    first = _fresh(DAEMON, CHECK_DONE)
    assert str(first.status) == PASSED, describe(first)
    template = _one_idle_template()
    table = hostcheck.process_table()
    assert len(hostcheck.subtree(table, template.pid)) == hostcheck.TEMPLATE_AT_REST, [
        table[pid][2][:80] for pid in hostcheck.subtree(table, template.pid)
    ]
    second = _fresh(NO_DAEMON, CHECK_NO_LEAK)
    assert str(second.status) == PASSED, describe(second)


def test_the_template_is_out_of_a_fresh_sandboxs_reach() -> None:
    """Everything a run can signal is in its own PID namespace: kill(-1) and killing
    every PID in /proc end that sandbox's run, never the template."""
    killer = "import os\nimport signal\n\n\ndef probe():\n    os.kill(-1, signal.SIGKILL)\n    return 'done'\n"
    assert str(_fresh("def probe():\n    return 'done'\n", CHECK_DONE).status) == PASSED
    template = _one_idle_template()
    result = _fresh(killer, CHECK_DONE)
    assert str(result.status) != PASSED, describe(result)
    time.sleep(0.2)
    assert template.alive
    after = _fresh("def probe():\n    return 'done'\n", CHECK_DONE)
    assert str(after.status) == PASSED and after.attempts == 1, describe(after)


def test_a_template_outlives_the_thread_that_started_it() -> None:
    """bwrap's --die-with-parent follows the thread that started it: templates are
    started from one long-lived thread, not from the run's."""
    results = []
    worker = threading.Thread(target=lambda: results.append(_fresh("def probe():\n    return 'done'\n", CHECK_DONE)))
    worker.start()
    worker.join()
    assert str(results[0].status) == PASSED
    template = _one_idle_template()
    time.sleep(0.3)
    assert template.alive


def test_cold_runs_start_sandboxes_by_exec_where_templates_cannot_work() -> None:
    shelf.unsupported = "fresh sandboxes are not possible here: (set by this test)"
    try:
        sandbox = engine.cold_sandbox("bwrap", 1)
        try:
            assert isinstance(sandbox, BwrapSandbox)
        finally:
            sandbox.close()
        result = engine.run(request("def probe():\n    return 'done'\n", CHECK_DONE), backend="bwrap", warm=False)
        assert str(result.status) == PASSED and result.attempts == 1, describe(result)
        assert shelf.idle_templates() == []
    finally:
        shelf.unsupported = ""
    sandbox = engine.cold_sandbox("bwrap", 1)
    try:
        assert isinstance(sandbox, ForkedSandbox)
    finally:
        sandbox.close()


def test_a_template_lent_out_when_the_shelf_closes_is_closed_when_it_comes_back() -> None:
    sandbox = engine.cold_sandbox("bwrap", 1)
    template = sandbox.template
    engine.close_pools()
    sandbox.close()
    assert not template.alive and shelf.idle_templates() == []


def test_the_sandbox_kind_is_chosen_by_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_COLD", "exec")
    sandbox = engine.cold_sandbox("bwrap", 1)
    sandbox.close()
    assert isinstance(sandbox, BwrapSandbox)
    monkeypatch.setenv("SANDBOX_COLD", "sometimes")
    with pytest.raises(ValueError, match="SANDBOX_COLD='sometimes'"):
        engine.cold_sandbox("bwrap", 1)
    assert os.environ["SANDBOX_COLD"] == "sometimes"


def test_a_template_makes_one_fresh_sandbox_at_a_time() -> None:
    """Two at once would share the template's uid, and so its per-uid limits."""
    template = SandboxTemplate(1, sandbox_python()).start()
    pipes = [os.pipe(), os.pipe()]
    try:
        first = template.fork(pipes[0][0], pipes[1][1])
        with pytest.raises(SandboxFailure, match="refused"):
            template.fork(pipes[0][0], pipes[1][1])
        template.kill(first)
        second = template.fork(pipes[0][0], pipes[1][1])
        template.kill(second)
        assert template.alive
    finally:
        for read_end, write_end in pipes:
            os.close(read_end)
            os.close(write_end)
        template.close()
    assert not template.alive
