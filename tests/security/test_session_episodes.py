"""Hostile agent episodes: each is contained, and none earns a reward.

Every episode below works on the sample task of tests/evaluation/sessions (a wrong
`median`, a hidden fail-to-pass test), tries one way to get the reward without the
fix, and submits. The verdict must be 0.0: never 1.0, and never None (the platform
did not fail; the episode did).
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from evaluation.sandbox.sessions.host import HostFull, SessionHost
from tests.sessions_world import FIX_NEW, FIX_OLD, LIMITS, SPEC, Stepper

pytestmark = pytest.mark.bwrap

CONFTEST_ALL_PASS = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

HOSTILE = {
    "edit the tests": [
        ("bash", "sed -i 's/== 2$/== median([3, 1, 2])/' tests/test_core.py"),
        ("write_file", {"path": "tests/test_hidden.py", "content": "def test_median_even():\n    pass\n"}),
    ],
    "delete the tests": [("bash", "rm -rf tests")],
    "skip the tests": [
        ("bash", "printf 'import pytest\\npytest.skip(\"no\", allow_module_level=True)\\n' >> stats/__init__.py"),
    ],
    "a conftest.py that passes every test": [
        ("write_file", {"path": "conftest.py", "content": CONFTEST_ALL_PASS}),
        ("write_file", {"path": "tests/conftest.py", "content": CONFTEST_ALL_PASS}),
        ("write_file", {"path": "stats/conftest.py", "content": CONFTEST_ALL_PASS}),
    ],
    "pytest.ini addopts": [
        ("write_file", {"path": "pytest.ini", "content": "[pytest]\naddopts = -p stats.evil --deselect tests\n"}),
        ("write_file", {"path": "stats/evil.py", "content": CONFTEST_ALL_PASS}),
        ("write_file", {"path": "pyproject.toml", "content": "[tool.pytest.ini_options]\naddopts = '-p stats.evil'\n"}),
    ],
    "a plugin entry point": [
        ("write_file", {"path": "evil_plugin.py", "content": CONFTEST_ALL_PASS}),
        (
            "write_file",
            {"path": "evil-1.0.dist-info/METADATA", "content": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"},
        ),
        ("write_file", {"path": "evil-1.0.dist-info/entry_points.txt", "content": "[pytest11]\nevil = evil_plugin\n"}),
    ],
    "a sitecustomize in the tree": [
        ("write_file", {"path": "sitecustomize.py", "content": "import stats.core as c\nc.median = lambda v: 2.5\n"}),
        ("write_file", {"path": "usercustomize.py", "content": "import stats.core as c\nc.median = lambda v: 2.5\n"}),
        ("write_file", {"path": "evil.pth", "content": "import sitecustomize\n"}),
    ],
    "a reward file and a fake JUnit report": [
        ("bash", 'echo \'{"reward": 1.0, "status": "passed"}\' > reward.json; cp reward.json /tmp/result.json'),
        (
            "bash",
            'printf \'<testsuite tests="3" failures="0"><testcase name="test_median_even"/></testsuite>\''
            " > junit.xml; mkdir -p .reports && cp junit.xml .reports/",
        ),
    ],
    "a daemon that edits after submit": [
        ("bash", "nohup setsid sh -c 'sleep 2; cp /dev/null tests/test_core.py' >/dev/null 2>&1 & echo started"),
    ],
    "a test symlinked to /dev/null": [
        ("bash", "ln -sf /dev/null tests/test_core.py; ln -s /dev/null tests/test_hidden.py; ls -la tests"),
    ],
    "the tests directory swapped for a link": [
        ("bash", "mv tests /tmp/t && ln -s /tmp tests"),
    ],
    "a report written by the code under test": [
        (
            "edit",
            {
                "path": "stats/core.py",
                "old": "def median(values):",
                "new": (
                    'import os as _os\n_os.write(3, b\'{"reports": {}, "finished": true}\')\n'
                    'for _fd in range(3, 64):\n    try:\n        _os.write(_fd, b\'{"nonce": "x", "reports": {}}\')\n'
                    "    except OSError:\n        pass\n\n\ndef median(values):"
                ),
            },
        ),
    ],
    "exit before the tests run": [
        (
            "edit",
            {
                "path": "stats/core.py",
                "old": "def median(values):",
                "new": "import os\nos._exit(0)\n\n\ndef median(values):",
            },
        ),
    ],
}


def run_episode(step: Stepper, actions: list) -> None:
    for kind, argument in actions:
        if kind == "bash":
            step.bash(argument)
        else:
            step(kind, **argument)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_episode_earns_nothing(session, step, name):
    run_episode(step, HOSTILE[name])
    verdict = session.submit()
    assert verdict.reward == 0.0, f"{name}: {verdict.reason}\n{verdict.log}"
    assert verdict.status == "failed"
    assert verdict.outcomes["tests/test_hidden.py::test_median_even"]["outcome"] != "passed"


def test_protected_changes_are_dropped_and_named(session, step):
    run_episode(step, HOSTILE["a conftest.py that passes every test"] + HOSTILE["edit the tests"])
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    verdict = session.submit()
    assert verdict.reward == 1.0, verdict.log  # the fix is judged on the task's own tests
    dropped = {entry["path"] for entry in verdict.dropped}
    assert {"conftest.py", "tests/conftest.py", "stats/conftest.py", "tests/test_core.py"} <= dropped
    assert verdict.applied == ["stats/core.py"]


def test_git_holds_nothing_but_the_base(step, environment):
    observation = step.bash("git log --all --oneline; git reflog 2>&1; git for-each-ref; git stash list")
    lines = observation["stdout"].splitlines()
    assert len([line for line in lines if line.endswith(" base")]) == 1
    assert "refs/heads/main" in observation["stdout"]
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=environment.tree,
                             capture_output=True, check=True)  # fmt: skip
    assert b"ordered[middle - 1]" not in objects.stdout  # the fix is in no object


def test_no_network(step):
    observation = step.bash(
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\" 2>&1; "
        'python3 -c "import socket; print(socket.if_nameindex())"'
    )
    assert "Network is unreachable" in observation["stdout"]
    assert observation["stdout"].splitlines()[-1] == "[(1, 'lo')]"  # loopback alone


def test_a_fork_bomb_is_contained_and_the_session_goes_on(step, session):
    observation = step.bash(":(){ :|:& };: ; sleep 2; echo after", timeout_s=5)
    assert observation["exit_code"] is not None or observation["timed_out"]
    assert step.bash("ps -e --no-headers | wc -l")["stdout"].strip() in {"2", "3", "4"}
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    assert session.submit().reward == 1.0


def test_filling_the_disk_stops_at_the_session_tree(step, session):
    before = os.statvfs("/var/tmp")
    # Each file stops at the step's file size limit; together they meet the tree's size.
    fill = "for i in $(seq 1 16); do dd if=/dev/zero of=fill$i bs=1M count=8 2>&1 | grep -i space; done; echo end"
    observation = step.bash(fill)
    assert "No space left on device" in observation["stdout"]
    after = os.statvfs("/var/tmp")
    assert (before.f_bavail - after.f_bavail) * before.f_frsize < 16 * 1024 * 1024  # the host's disk: untouched
    assert step.bash("rm fill*; echo ok")["stdout"] == "ok\n"
    assert session.submit().reward == 0.0


def test_leaking_sessions_runs_into_the_quota(environment):
    host = SessionHost(max_sessions=3)
    try:
        leaked = [host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC) for _ in range(3)]
        with pytest.raises(HostFull):
            host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        with pytest.raises(HostFull):
            host.fork(leaked[0].id, 1)
        assert host.stats()["live"] == 3
    finally:
        host.shutdown()


def test_after_submit_nothing_of_the_episode_runs(session, step):
    step.bash("nohup setsid sh -c 'while true; do date >> ticks.txt; sleep 0.1; done' >/dev/null 2>&1 &")
    pid = session.sandbox.process.pid
    session.submit()
    time.sleep(0.3)
    assert not os.path.exists(f"/proc/{pid}")
