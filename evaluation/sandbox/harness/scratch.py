"""The sandbox's scratch: the private tmpfs a run may write to, its run directory
(a solution process's working directory and home), and the wipe after each run
of it and of the other writable places, so no run finds another's files."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

# Wiped between runs, so it must be named explicitly: the sandbox's private tmpfs.
SCRATCH = os.environ.get("HARNESS_SCRATCH", "")
RUN_DIR = os.path.join(SCRATCH, "run")
# Where the judge anchors a pytest suite's collection (suite_pytest.py).
SCRATCH_FOR_JUDGE = os.environ.get("HARNESS_SCRATCH", "/scratch")
# Other writable places a run could leave something in (the sandbox's /tmp, /dev/shm).
WIPE_TOO = [p for p in os.environ.get("HARNESS_WIPE", "").split(":") if os.path.isabs(p)]


def wipe() -> None:
    """Empty the scratch (but for an empty run directory) and the other writable places."""
    for extra in WIPE_TOO:
        _empty(extra)
    entries = os.listdir(SCRATCH)
    if entries == ["run"] and not os.listdir(RUN_DIR):
        return
    _empty(SCRATCH)
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)


def _empty(directory: str) -> None:
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(directory, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                import shutil

                shutil.rmtree(path, onerror=_unlock_and_retry)
            else:
                os.unlink(path)
        except OSError:
            pass


def _unlock_and_retry(function: Any, path: str, _exc: Any) -> None:
    """A run may leave a directory it made unreadable or unwritable: open it up
    (it is ours, same uid) and try again, so nothing survives into the next run."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            import shutil

            os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
        else:
            function(path)
    except OSError:
        pass
