"""`make run`'s sandbox step (platform/scripts/ensure-sandbox.sh, which run.sh runs before
it migrates or serves anything) on a machine where bubblewrap is missing or broken.

The machine is made "fresh" by the PATH alone: a folder of links to every command of
this host except `bwrap` (and `apt-get`, where the test says so). The script and the
platform look for bwrap the same way (on the PATH: `command -v`, shutil.which), so both
see a machine without it. Nothing here really installs a package: where the script is
allowed to install, `apt-get` on that PATH is a stand-in that records its arguments and
"installs" bubblewrap by linking the host's real bwrap into the folder, because a test
must not change the machine. The sandbox check after it is real: a bwrap sandbox runs a
correct solution through the platform (manage.py sandbox_check).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "platform" / "scripts" / "ensure-sandbox.sh"
RUN = ROOT / "platform" / "scripts" / "run.sh"
BIN_FOLDERS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
HOST_PATH = os.pathsep.join(BIN_FOLDERS)  # everything of this host, bwrap included


@pytest.fixture
def bin_folder() -> Iterator[Path]:
    """An empty folder that every uid may search: as root the platform starts bwrap as a
    sandbox uid of its own, which could not reach a bwrap under pytest's private tmp_path."""
    folder = Path(tempfile.mkdtemp(prefix="fresh-path-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fresh_path(folder: Path, *left_out: str) -> Path:
    """Links in `folder` to every command on this host but `left_out` (bwrap, always)."""
    real_bwrap = shutil.which("bwrap")
    assert real_bwrap, "these tests need bubblewrap installed on the host (make test installs it)"
    for source in BIN_FOLDERS:
        if not os.path.isdir(source):
            continue
        for entry in os.scandir(source):
            link = folder / entry.name
            if entry.name in ("bwrap", *left_out) or link.exists() or link.is_symlink():
                continue
            link.symlink_to(entry.path)
    assert shutil.which("bwrap", path=str(folder)) is None
    return folder


def fake_apt_get(folder: Path, log: Path) -> None:
    """A stand-in for apt-get (the real one would change this machine): records each call,
    and on `install bubblewrap` links the host's real bwrap into `folder`, as an install would."""
    script = folder / "apt-get"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{log}"\n'
        'case " $* " in\n'
        f'  *" install "*" bubblewrap "*) ln -sf "{shutil.which("bwrap")}" "{folder}/bwrap" ;;\n'
        "esac\n"
    )
    script.chmod(0o755)


def setup_step(path: Path | str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": str(path),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PLATFORM_VAR_DIR": str(tmp_path / "var"),
        "SANDBOX_REPLAY_DIR": str(tmp_path / "replay"),
        **extra,
    }
    return subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_without_bwrap_and_without_apt_get_it_stops_with_one_message_naming_the_package_and_the_command(
    tmp_path, bin_folder
):
    path = fresh_path(bin_folder, "apt-get")
    done = setup_step(path, tmp_path)
    assert done.returncode != 0, done.stderr
    (message,) = errors(done.stderr)  # one message, and nothing served after it
    assert "missing: bubblewrap;" in message
    assert re.search(r"run `(sudo )?apt-get install -y --no-install-recommends bubblewrap`", message), message
    assert "apt-get is not on the PATH" in message and "sandbox_error" in message
    assert "sandbox works" not in done.stderr


def test_when_it_may_not_install_it_refuses_without_calling_apt_get(tmp_path, bin_folder):
    path = fresh_path(bin_folder)
    fake_apt_get(path, tmp_path / "apt.log")
    done = setup_step(path, tmp_path, PLATFORM_INSTALL="0")
    assert done.returncode != 0
    (message,) = errors(done.stderr)
    assert "bubblewrap" in message and "PLATFORM_INSTALL=0 is set" in message
    assert "apt-get install -y --no-install-recommends bubblewrap" in message
    assert not (tmp_path / "apt.log").exists(), "apt-get ran although PLATFORM_INSTALL=0"


def test_as_root_with_apt_get_it_installs_bubblewrap_then_runs_a_real_sandbox(tmp_path, bin_folder):
    assert os.geteuid() == 0, "this test runs the script as root, where it may install (as on CI and the dev hosts)"
    path = fresh_path(bin_folder)
    fake_apt_get(path, tmp_path / "apt.log")
    done = setup_step(path, tmp_path)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls == ["update -qq", "install -y -qq --no-install-recommends bubblewrap"], calls
    # The check found the bwrap the install put on the PATH, and a sandbox ran a solution in it.
    assert "the bwrap sandbox works" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("python", "says"),
    [
        ("/usr/bin/true", "a bwrap sandbox does not start"),  # executable, but no interpreter: never greets
        ("/nonexistent/python3", "SANDBOX_PYTHON=/nonexistent/python3 is not an executable interpreter"),
    ],
)
def test_a_broken_backend_stops_it_with_the_reason(tmp_path, python, says):
    done = setup_step(HOST_PATH, tmp_path, SANDBOX_PYTHON=python)
    assert done.returncode != 0
    (message,) = errors(done.stderr)
    assert says in message and "sandbox_error" in message, message


def test_an_unknown_backend_is_named(tmp_path):
    done = setup_step(HOST_PATH, tmp_path, SANDBOX_BACKEND="podman")
    assert done.returncode != 0
    assert errors(done.stderr) == ["error: SANDBOX_BACKEND=podman: use bwrap (the default) or docker"]


def test_run_sh_runs_the_sandbox_step_before_it_migrates_or_serves():
    lines = RUN.read_text().splitlines()
    step = next(i for i, line in enumerate(lines) if "ensure-sandbox.sh" in line and not line.lstrip().startswith("#"))
    for later in ("manage.py migrate", "worker.sh", "runserver"):
        first = next(i for i, line in enumerate(lines) if later in line and not line.lstrip().startswith("#"))
        assert step < first, f"run.sh reaches {later!r} before its sandbox step"
