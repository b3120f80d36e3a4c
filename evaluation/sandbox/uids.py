"""Host-wide allocation of sandbox uids.

Each running sandbox gets a uid of its own, so that per-user limits (the
process count above all) bind that sandbox alone: a fork bomb in one cannot
starve another, whichever worker process or pool started them. A uid is held
by an exclusive lock on a file named after it, which the kernel releases if
the holder dies, so a crashed worker leaks nothing.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

UID_BASE = int(os.environ.get("SANDBOX_UID_BASE", "200000"))
UID_COUNT = int(os.environ.get("SANDBOX_UID_COUNT", "4096"))
LOCK_DIR = Path(os.environ.get("SANDBOX_UID_LOCK_DIR", Path(tempfile.gettempdir()) / "taskplatform-sandbox-uids"))


class UidLease:
    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the lock
            self._fd = -1


def lease_uid(hint: int = 0) -> UidLease:
    """Lock the first free uid, starting the search at `hint` to spread the locks."""
    LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    for offset in range(UID_COUNT):
        uid = UID_BASE + (hint + offset) % UID_COUNT
        fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise RuntimeError(f"all {UID_COUNT} sandbox uids from {UID_BASE} are in use")


def reap_orphaned_uids() -> int:
    """Kill processes running as a sandbox uid that no live sandbox holds: what a
    crashed worker's sandboxes left. The uids are the platform's alone, so a
    process of a free one is always an orphan. Returns how many were killed."""
    import signal

    if not LOCK_DIR.is_dir():
        return 0
    owners: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                uid_line = next(line for line in handle if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        uid = int(uid_line.split()[1])
        if UID_BASE <= uid < UID_BASE + UID_COUNT:
            owners.setdefault(uid, []).append(int(name))
    killed = 0
    for uid, pids in owners.items():
        fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live sandbox holds it
        finally:
            os.close(fd)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed
