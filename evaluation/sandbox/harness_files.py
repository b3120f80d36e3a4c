"""The harness as the sandboxes see it: its files, its version, a readable copy."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent.parent / "harness"
FILES = ("__init__.py", "agent.py", "codec.py", "judge.py", "protocol.py", "pytest_judge.py", "solution.py")


@lru_cache(maxsize=1)
def harness_version() -> str:
    """SHA-256 over the harness files: the same computation the agent does inside."""
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (HARNESS_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()


@lru_cache(maxsize=1)
def readable_copy() -> Path:
    """A world-readable copy of the harness, keyed by its version.

    Sandboxes run as unprivileged uids that may not traverse the checkout (it
    can live under /root); they get this copy, bound read-only.
    """
    version = harness_version()
    target = Path(tempfile.gettempdir()) / f"taskplatform-harness-{version[:16]}"
    if target.exists() and not _trusted(target):
        raise RuntimeError(f"{target} exists but is not a harness copy this user made; remove it")
    if not (target / "agent.py").exists():
        staging = Path(tempfile.mkdtemp(prefix="harness-", dir=tempfile.gettempdir()))
        for name in FILES:
            shutil.copyfile(HARNESS_DIR / name, staging / name)
            os.chmod(staging / name, 0o644)
        os.chmod(staging, 0o755)  # noqa: S103 - sandboxes run as other uids and must read it
        try:
            staging.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _trusted(path: Path) -> bool:
    """Ours and writable by nobody else (a shared temp dir invites swapped files)."""
    for item in [path, *path.iterdir()]:
        info = item.lstat()
        if item.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
    return True
