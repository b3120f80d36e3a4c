"""Host-wide allocation of sandbox uids.

Each running sandbox gets a uid of its own, so that per-user limits (the
process count above all) bind that sandbox alone: a fork bomb in one cannot
starve another, whichever worker process or pool started them. A uid is held
by an exclusive lock on a file named after it, which the kernel releases if
the holder dies, so a crashed worker leaks nothing.

The rule every holder keeps: a uid is leased before any process runs as it, and
released only once every process that ran as it is gone. So a process running as
a sandbox uid that no one holds is an orphan, and the reaper may kill it; and it
holds the uid's lock while it does, so no sandbox can lease the uid and start
between its look and its kill.
"""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
from pathlib import Path

from evaluation.sandbox.errors import SandboxFailure

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


def _lock(uid: int) -> int | None:
    """A descriptor holding `uid`'s lock, or None when someone else holds it."""
    fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def lease_uid(hint: int = 0) -> UidLease:
    """Lock the first free uid, starting the search at `hint` to spread the locks.
    Every uid taken is a start that cannot go ahead: a SandboxFailure (start_failed),
    an infrastructure fault like any other, never an exception the caller must know."""
    LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    for offset in range(UID_COUNT):
        uid = UID_BASE + (hint + offset) % UID_COUNT
        fd = _lock(uid)
        if fd is not None:
            return UidLease(uid, fd)
    raise SandboxFailure(
        f"all {UID_COUNT} sandbox uids from {UID_BASE} are in use (SANDBOX_UID_COUNT)",
        anomaly="start_failed",
        reason="uids_exhausted",
    )


def _processes_by_uid() -> dict[int, list[int]]:
    """Living processes (not zombies: they hold nothing and cannot be killed) by sandbox uid."""
    owners: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        uid = _sandbox_uid_of(int(name))
        if uid is not None:
            owners.setdefault(uid, []).append(int(name))
    return owners


def _sandbox_uid_of(pid: int) -> int | None:
    """The sandbox uid a living process runs as (its real uid), or None."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            fields = dict(line.split(":", 1) for line in handle if line[:4] in ("Stat", "Uid:"))
    except (OSError, ValueError):
        return None
    if fields.get("State", "").strip().startswith(("Z", "X")):
        return None
    uid = int(fields["Uid"].split()[0]) if "Uid" in fields else -1
    return uid if UID_BASE <= uid < UID_BASE + UID_COUNT else None


def _kill(pid: int, uid: int) -> bool:
    """SIGKILL `pid` if it still runs as `uid`. Through a pidfd where the kernel has
    them, so that a pid freed and handed to another process meanwhile is not hit."""
    pidfd = -1
    try:
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(pid)
        if _sandbox_uid_of(pid) != uid:  # gone, or no longer ours: checked after pinning it
            return False
        if pidfd >= 0:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def reap_orphaned_uids() -> int:
    """Kill processes running as a sandbox uid that no live sandbox holds: what a
    crashed worker's sandboxes left. The uids are the platform's alone, so a
    process of a free one is always an orphan. Returns how many were killed.

    Each uid's lock is held while its processes are killed: a sandbox leasing the
    uid meanwhile waits for another, so none can start as it between the look and
    the kill (the lock was dropped before the kill once, which left that window)."""
    if not LOCK_DIR.is_dir():
        return 0
    killed = 0
    for uid, pids in _processes_by_uid().items():
        fd = _lock(uid)
        if fd is None:
            continue  # a live sandbox holds it
        try:
            killed += sum(_kill(pid, uid) for pid in pids)
        finally:
            os.close(fd)
    return killed
