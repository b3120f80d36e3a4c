"""A small repository task and a session host, for the session engine's tests and the
hostile episodes (tests/security): the constants and fixtures both conftests import."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec, PreparedEnvironment
from evaluation.sandbox.sessions.host import SessionHost
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.session import Session
from evaluation.sandbox.sessions.verdict import VerdictSpec

# A tiny project whose `median` is wrong for lists of even length. The visible tests
# pass before and after the fix; the hidden test fails before it.
FILES = {
    "stats/__init__.py": b"from stats.core import mean, median\n",
    "stats/core.py": (
        b"def mean(values):\n    return sum(values) / len(values)\n\n\n"
        b"def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
    ),
    "tests/test_core.py": (
        b"from stats import mean, median\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        b"def test_median_odd():\n    assert median([3, 1, 2]) == 2\n"
    ),
    "README.md": b"# stats\n",
}
HIDDEN = {
    "tests/test_hidden.py": (
        "from stats import median\n\n\ndef test_median_even():\n    assert median([4, 1, 3, 2]) == 2.5\n"
    )
}
FIX_OLD = "    return ordered[len(ordered) // 2]\n"
FIX_NEW = (
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
SPEC = VerdictSpec(
    fail_to_pass=("tests/test_hidden.py::test_median_even",),
    pass_to_pass=("tests/test_core.py::test_mean", "tests/test_core.py::test_median_odd"),
    hidden=HIDDEN,
    protected=("tests/**",),
    timeout_s=60.0,
)
LIMITS = SessionLimits(step_timeout_s=20.0, idle_timeout_s=60.0, lease_s=120.0, tree_bytes=32 * 1024 * 1024)


def _reachable_directory() -> Path:
    """A directory the sandbox uids can reach (pytest's tmp_path is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="test-session-environments-", dir="/var/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - sandboxes bind trees under it as other uids
    return root


def _remove(root: Path) -> None:
    for dirpath, _dirnames, _filenames in os.walk(root):
        os.chmod(dirpath, 0o700)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def cache_root() -> Iterator[Path]:
    root = _reachable_directory()
    yield root
    _remove(root)


@pytest.fixture(scope="session")
def environment() -> Iterator[PreparedEnvironment]:
    root = _reachable_directory()
    yield EnvironmentCache(root).get(EnvironmentSpec(files=FILES))
    _remove(root)


@pytest.fixture
def host() -> Iterator[SessionHost]:
    host = SessionHost(max_sessions=8)
    yield host
    host.shutdown()


@pytest.fixture
def session(host: SessionHost, environment: PreparedEnvironment) -> Session:
    return host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC, statement="Fix median.")


class Stepper:
    """Runs actions on a session with consecutive seq numbers."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __call__(self, kind: str, timeout_s: float | None = None, **fields: object) -> dict:
        return self.session.execute(seq=len(self.session.steps) + 1, action={"kind": kind, **fields},
                                    timeout_s=timeout_s)  # fmt: skip

    def bash(self, command: str, timeout_s: float | None = None) -> dict:
        return self("bash", command=command, timeout_s=timeout_s)


@pytest.fixture
def step(session: Session) -> Stepper:
    return Stepper(session)
