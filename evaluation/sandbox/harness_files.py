"""The harness as the sandboxes see it: its files, its version, a readable copy."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
SUPERVISOR_ENTRY = "from harness.supervisor import entry; entry()"
# Every module of the harness package: the copy the sandboxes get holds exactly these,
# and the supervisor hashes the same set inside (supervisor.harness_version), so the list is
# written down nowhere and a new module cannot be left out of either.
FILES = tuple(sorted(path.name for path in HARNESS_DIR.glob("*.py")))


@lru_cache(maxsize=1)
def harness_version() -> str:
    """SHA-256 over the harness files: the same computation the supervisor does inside."""
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
    if not (target / "supervisor.py").exists():
        staging = Path(tempfile.mkdtemp(prefix="harness-", dir=tempfile.gettempdir()))
        for name in FILES:
            shutil.copyfile(HARNESS_DIR / name, staging / name)
            os.chmod(staging / name, 0o644)
        _precompile(staging)
        os.chmod(staging, 0o755)  # noqa: S103 - sandboxes run as other uids and must read it
        try:
            staging.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _precompile(directory: Path) -> None:
    """Byte-compile the copy with the sandbox's interpreter: sandboxes run with -B on a
    read-only bind, so without these every sandbox compiles the harness at start
    (~10 ms). Unchecked hashes: the copy never changes (its name is its version).
    A failure only costs that time back, never correctness."""
    python = os.environ.get("SANDBOX_PYTHON", "/usr/bin/python3")
    script = (
        "import compileall, py_compile, sys; compileall.compile_dir(sys.argv[1], quiet=2, "
        "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
    )
    try:
        subprocess.run([python, "-c", script, str(directory)], check=False, timeout=60, capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return
    cache = directory / "__pycache__"
    if cache.is_dir():
        os.chmod(cache, 0o755)  # noqa: S103 - read by the sandboxes' uids
        for item in cache.iterdir():
            os.chmod(item, 0o644)


def _trusted(path: Path) -> bool:
    """Ours and writable by nobody else (a shared temp dir invites swapped files)."""
    for item in [path, *path.rglob("*")]:
        info = item.lstat()
        if item.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
    return True
