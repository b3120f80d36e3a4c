"""What no solution process may do, even with every file it can write: execute one,
as a program or as a shared library, and hold a capability.

The writable places of a warm sandbox (its scratch, /tmp, /dev/shm) are tmpfs mounts
that bwrap mounts exec and cannot mount otherwise. So the zygote, at start-up and
before any run, enters a user and mount namespace of its own in which those places
are bound noexec, and drops every capability it has there (`enter_noexec`). Every
solution process is its fork and sees that view; a solution that makes a user
namespace of its own gets a copy of these mounts that the kernel locks, so it cannot
lift the flag either. The judge stays in the sandbox's namespace, where the same
files are exec: a program the host built is opened there and exec'd by descriptor
(program.py), so the built program runs and nothing a solution writes does: not a
binary, not a JNI library written at run time, not a library for ctypes.

A solution process in a user namespace below the judge's also loses what same-uid
processes share there: it cannot ptrace the judge or read its /proc memory.
"""

from __future__ import annotations

import os
import struct

from . import lite

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 32, 4096, 16384, 1 << 18
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
CAPABILITY_VERSION_3 = 0x20080522
ST_NOEXEC = 8


def noexec_paths() -> list[str]:
    """The places the host asks to be noexec for solution processes (HARNESS_NOEXEC,
    colon-separated; unset where the backend mounts them noexec itself or cannot)."""
    return [path for path in os.environ.get("HARNESS_NOEXEC", "").split(":") if path]


def enter_noexec(paths: list[str]) -> None:
    """Enter a user and mount namespace of our own where every path in `paths` (each a
    mount point) is noexec, then drop every capability. Raises OSError, naming the step,
    when any of it fails: the caller must then serve nothing."""
    uid, gid = os.getuid(), os.getgid()
    # A process writes its own uid_map only while dumpable. Nothing can reach us in that
    # moment: the zygote does this before it forks anything, and the judge is trusted.
    lite.prctl(PR_SET_DUMPABLE, 1)
    try:
        lite.check(lite.libc("unshare", "i")(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
        write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        write_file("/proc/self/setgroups", "deny")
        write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    finally:
        lite.prctl(PR_SET_DUMPABLE, 0)
    mount = lite.libc("mount", "z", "z", "z", "L", "z")
    lite.check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making the mounts private")
    for path in paths:
        target = path.encode()
        lite.check(mount(target, target, None, MS_BIND, None), f"binding {path}")
        # nosuid and nodev are bwrap's (locked here): a remount must keep them.
        flags = MS_REMOUNT | MS_BIND | MS_NOEXEC | MS_NOSUID | MS_NODEV
        lite.check(mount(None, target, None, flags, None), f"making {path} noexec")
    drop_privileges()
    for path in paths:
        if not os.statvfs(path).f_flag & ST_NOEXEC:
            raise OSError(0, f"{path} is still exec after binding it noexec")
    os.chdir(os.getcwd())  # the working directory, looked up again: on the noexec bind now


def drop_privileges() -> None:
    """Every capability the new user namespace gave us, from every set, for good."""
    last = int(read_file("/proc/sys/kernel/cap_last_cap"))
    for capability in range(last + 1):
        lite.prctl(PR_CAPBSET_DROP, capability)
    header = struct.pack("Ii", CAPABILITY_VERSION_3, 0)
    lite.check(lite.libc("capset", "z", "z")(header, bytes(24)), "capset")  # effective, permitted, inheritable
    lite.prctl(PR_SET_NO_NEW_PRIVS, 1)
    status = read_file("/proc/self/status")
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb") and int(value.strip(), 16) != 0:
            raise OSError(0, f"{name} is still {value.strip()} after dropping every capability")


def write_file(path: str, text: str) -> None:
    """Write `text` to a /proc file in one write, as the kernel wants it."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def read_file(path: str) -> str:
    with open(path) as handle:
        return handle.read()
