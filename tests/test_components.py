"""A test that needs a missing component (tests/components.py) fails and says why; it
skips only when TEST_ALLOW_MISSING names the component. Each check runs pytest in a
child process whose PATH lacks bubblewrap, or whose test database is SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BWRAP_MESSAGE = (
    "bubblewrap (bwrap) is not installed: `make test` installs it; set TEST_ALLOW_MISSING=bwrap to skip these tests"
    " instead"
)
TINY = """
import pytest

from tests.components import require


@pytest.mark.bwrap
def test_marked():
    pass


def test_asks_at_run_time():
    require("bwrap")


@pytest.mark.postgres
def test_postgres_only():
    pass


def test_needs_nothing():
    pass
"""
# The project's own hooks, as tests/conftest.py installs them for the whole suite.
CONFTEST = "from tests.conftest import pytest_configure, pytest_runtest_setup  # noqa: F401\n"


@pytest.fixture(scope="module")
def path_without_bwrap(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH of one folder linking every program of this PATH but bwrap."""
    folder = tmp_path_factory.mktemp("bin")
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name != "bwrap" and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    return str(folder)


def child_pytest(cwd: Path, *args: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in a child process: the test database is SQLite (no DATABASE_URL), so it
    never touches this run's PostgreSQL test database."""
    child_env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_ALLOW_MISSING")},
        "PATH": path,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rsE", "-q", *args],
        cwd=cwd, env=child_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_tiny.py").write_text(TINY)
    return tmp_path


def test_a_missing_component_fails_with_the_reason(tiny, path_without_bwrap):
    run = child_pytest(tiny, path=path_without_bwrap)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "1 failed, 1 passed, 2 errors" in out, out  # the marked tests fail at setup
    assert out.count(BWRAP_MESSAGE) >= 2, out
    assert "PostgreSQL is not the test database (it is sqlite" in out, out
    assert "TEST_ALLOW_MISSING=postgres to skip these tests instead" in out, out
    assert "skipped" not in out, out


def test_the_opt_in_skips_what_it_names_and_only_that(tiny, path_without_bwrap):
    run = child_pytest(tiny, path=path_without_bwrap, TEST_ALLOW_MISSING="bwrap")
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "1 passed, 2 skipped, 1 error" in out, out
    assert "bubblewrap (bwrap) is not installed (TEST_ALLOW_MISSING=bwrap)" in out, out

    run = child_pytest(tiny, path=path_without_bwrap, TEST_ALLOW_MISSING="postgres, bwrap")
    assert run.returncode == 0 and "1 passed, 3 skipped" in run.stdout, run.stdout + run.stderr
    run = child_pytest(tiny, path=path_without_bwrap, TEST_ALLOW_MISSING="all")
    assert run.returncode == 0 and "1 passed, 3 skipped" in run.stdout, run.stdout + run.stderr


def test_a_marker_deselects_a_components_tests(tiny, path_without_bwrap):
    run = child_pytest(tiny, "-m", "not bwrap and not postgres", path=path_without_bwrap)
    out = run.stdout + run.stderr
    # The test that calls require() at run time is not marked: it still fails.
    assert run.returncode == 1 and "1 failed, 1 passed, 2 deselected" in out, out


def test_a_misspelt_opt_in_is_refused_before_anything_runs(tiny, path_without_bwrap):
    run = child_pytest(tiny, path=path_without_bwrap, TEST_ALLOW_MISSING="bwarp,docker")
    out = run.stdout + run.stderr
    assert run.returncode == 4, out
    assert "TEST_ALLOW_MISSING names 'bwarp': use some of bwrap, chromium, docker, postgres, redis (or all)" in out


def test_a_present_component_runs_its_tests(tiny):
    run = child_pytest(tiny, "-k", "marked or run_time", path=os.environ["PATH"])
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr


@pytest.mark.slow
def test_the_sandbox_suites_fail_without_bubblewrap(path_without_bwrap):
    """The suites that skipped quietly when bwrap was missing now fail, naming it."""
    run = child_pytest(
        ROOT,
        "tests/security/test_fresh_sandboxes.py",
        "tests/evaluation/test_harness_lite.py::test_cold_sandboxes_seed_random_for_the_solution_and_the_tests",
        "tests/security/test_isolation_between_runs.py::test_second_run_sees_what_a_fresh_sandbox_sees",
        "-k",
        "not docker",
        path=path_without_bwrap,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "skipped" not in out and " passed" not in out, out
    assert out.count(BWRAP_MESSAGE) >= 3, out
