"""A session's working tree inside its sandbox: what changed in a step, what the episode
changed against the base, and how a fork or a verdict lays those changes down again.

The tree is walked with `os.scandir` and never followed through symlinks: a link is
recorded as a link (its target a string), so nothing the episode points at outside
the tree is read. Python's bytecode caches are never part of a change: they are the
interpreter's, not the episode's.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat

TYPE_CHECKING = False  # typing costs ~3 ms to import
if TYPE_CHECKING:
    from typing import Any

IGNORED_NAMES = frozenset({"__pycache__", ".pytest_cache"})
# A walk stops here: a tree of more entries is an episode filling inodes, and the
# step says so instead of spending seconds on it.
MAX_ENTRIES = 50_000


class TreeTooLarge(Exception):
    """The tree holds more entries than a walk will look at."""


def snapshot(root: str) -> dict[str, tuple[int, int, int, int, int]]:
    """{relative path: (kind, size, mtime_ns, ctime_ns, inode)} of every file and link under `root`
    (directories are implied by their files; .git is walked like the rest)."""
    return scan(root)[0]


def scan(root: str, *, measure: bool = False) -> tuple[dict[str, tuple[int, int, int, int, int]], int]:
    """The snapshot of `root` and, when `measure`d, the bytes of disk the tree takes as
    `usage` counts them, in the same walk (it descends into bytecode caches then, only
    to count them)."""
    entries: dict[str, tuple[int, int, int, int, int]] = {}
    used = 0
    stack = [("", False)]
    while stack:
        relative, ignored = stack.pop()
        try:
            scanner = os.scandir(os.path.join(root, relative) if relative else root)
        except OSError:
            continue
        with scanner:
            for entry in scanner:
                skipped = ignored or entry.name in IGNORED_NAMES
                if skipped and not measure:
                    continue
                path = f"{relative}/{entry.name}" if relative else entry.name
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    stack.append((path, skipped))
                    continue
                if skipped:
                    continue
                entries[path] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                                 info.st_ino)  # fmt: skip
                if len(entries) > MAX_ENTRIES:
                    raise TreeTooLarge(f"the tree holds more than {MAX_ENTRIES} files")
    return entries, used


def usage(root: str) -> int:
    """The bytes of disk the tree under `root` takes (blocks, not sizes: a sparse file
    takes what it holds), every entry counted, bytecode caches and directories too."""
    total = 0
    stack = [root]
    while stack:
        try:
            scanner = os.scandir(stack.pop())
        except OSError:
            continue
        with scanner:
            for entry in scanner:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
    return total


def file_digest(path: str) -> str:
    """sha256 of a file's bytes, or of a link's target (never followed)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(path))).hexdigest()
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def step_changes(root: str, before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """What a step did to the tree: each path added, modified or deleted, with the sha256
    of what is there now."""
    changes = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new or _in_git(path):  # git's own bookkeeping (its index) is not the episode's work
            continue
        if new is None:
            changes.append({"path": path, "operation": "deleted", "sha256": None})
            continue
        try:
            digest = file_digest(os.path.join(root, path))
        except OSError:
            continue  # a special file the step made (a fifo, a socket): not content
        changes.append({"path": path, "operation": "added" if old is None else "modified", "sha256": digest})
    return changes


def _same_file(left: str, right: str, left_info: os.stat_result, right_info: os.stat_result) -> bool:
    if stat.S_IFMT(left_info.st_mode) != stat.S_IFMT(right_info.st_mode):
        return False
    if stat.S_ISLNK(left_info.st_mode):
        return os.readlink(left) == os.readlink(right)
    if left_info.st_size != right_info.st_size or (left_info.st_mode & 0o111) != (right_info.st_mode & 0o111):
        return False
    # Contents compared always, never trusted from mtimes: `touch -r` or `cp -p` would
    # otherwise hide a change from a fork or from the verdict.
    with open(left, "rb") as a, open(right, "rb") as b:
        while True:
            chunk = a.read(1 << 20)
            if chunk != b.read(1 << 20):
                return False
            if not chunk:
                return True


def changes_against(base: str, root: str, *, max_bytes: int, pristine: dict[str, Any] | None = None) -> list[dict]:
    """The episode's changes: every regular file or link under `root` that differs from
    `base` (written in full, base64) and every one of `base` gone from `root`. .git is
    left out: the episode's history is not its answer.

    `pristine` is the snapshot taken when `root` was a plain copy of `base`: a file whose
    inode and ctime are still those is still that copy (no write, rename or chmod leaves
    the ctime, and no call sets it), so it is not read again. Without it, every file is
    compared byte for byte."""
    pristine = pristine or {}
    ours = {path: info for path, info in snapshot(root).items() if not _in_git(path)}
    theirs = {path: info for path, info in snapshot(base).items() if not _in_git(path)}
    # Deletions first: a file may replace a directory the base had, or the reverse.
    changes: list[dict[str, Any]] = [{"path": path, "op": "delete"} for path in sorted(set(theirs) - set(ours))]
    total = 0
    for path in sorted(ours):
        full = os.path.join(root, path)
        info = os.lstat(full)
        kind = stat.S_IFMT(info.st_mode)
        if kind not in (stat.S_IFREG, stat.S_IFLNK):
            continue  # fifos, sockets: nothing a diff can carry
        if path in theirs and pristine.get(path) == ours[path]:
            continue  # untouched since the copy was made
        if path in theirs:
            base_path = os.path.join(base, path)
            if _same_file(full, base_path, info, os.lstat(base_path)):
                continue
        if kind == stat.S_IFLNK:
            changes.append({"path": path, "op": "symlink", "target": os.readlink(full)})
            continue
        total += info.st_size
        if total > max_bytes:
            raise TreeTooLarge(f"the episode changed more than {max_bytes} bytes of files")
        with open(full, "rb") as handle:
            data = handle.read()
        changes.append({"path": path, "op": "write", "executable": bool(info.st_mode & 0o100),
                        "data": base64.b64encode(data).decode("ascii"),
                        "sha256": hashlib.sha256(data).hexdigest()})  # fmt: skip
    return changes


def copy_tree(source: str, target: str) -> int:
    """Copy the tree under `source` into the existing directory `target`, as `cp -a` would
    for what a prepared tree holds (files, links, directories, fifos: their modes and
    times; not owners, which are the sandbox's own either way), without starting one.
    Returns the bytes copied; an OSError (the tmpfs full, say) stops it."""
    copied = 0
    directories: list[tuple[str, os.stat_result]] = []
    stack = [("", os.lstat(source))]
    while stack:
        relative, directory_info = stack.pop()
        here = os.path.join(target, relative) if relative else target
        if relative:
            os.mkdir(here, 0o700)  # its own mode once its entries are in (a read-only one would refuse them)
        directories.append((here, directory_info))
        with os.scandir(os.path.join(source, relative) if relative else source) as scanner:
            for entry in scanner:
                path = f"{relative}/{entry.name}" if relative else entry.name
                info = entry.stat(follow_symlinks=False)
                destination = os.path.join(target, path)
                if stat.S_ISDIR(info.st_mode):
                    stack.append((path, info))
                elif stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(entry.path), destination)
                    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
                elif stat.S_ISREG(info.st_mode):
                    copied += _copy_file(entry.path, destination, info)
                elif stat.S_ISFIFO(info.st_mode):
                    os.mkfifo(destination, stat.S_IMODE(info.st_mode))
                # sockets and devices: nothing a copy can carry (cp -a would fail on a device)
    for here, info in reversed(directories):  # children first: setting a time is a change to the parent
        os.chmod(here, stat.S_IMODE(info.st_mode))
        os.utime(here, ns=(info.st_atime_ns, info.st_mtime_ns))
    return copied


def _copy_file(source: str, destination: str, info: os.stat_result) -> int:
    fd_in = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fd_out = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            remaining, offset = info.st_size, 0
            while remaining > 0:
                sent = os.sendfile(fd_out, fd_in, offset, remaining)
                if sent == 0:
                    break  # the file shrank under us: what it holds now is copied
                offset += sent
                remaining -= sent
            os.fchmod(fd_out, stat.S_IMODE(info.st_mode))
            os.utime(fd_out, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    return info.st_size


def _in_git(path: str) -> bool:
    return path == ".git" or path.startswith(".git/")


def safe_join(root: str, path: str) -> str:
    """`path` (relative, or absolute under `root`) inside `root`, refusing `..` and NULs.
    Only the lexical path is checked: links inside the tree lead wherever the sandbox
    lets them, which is nowhere outside it."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError("a path must be a non-empty string without NUL bytes")
    if path.startswith("/"):
        if path != root and not path.startswith(root.rstrip("/") + "/"):
            raise ValueError(f"{path} is outside {root}")
        path = path[len(root) :].lstrip("/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{path}: '..' is not allowed")
    return os.path.join(root, *parts) if parts else root


def apply_changes(root: str, changes: list[dict[str, Any]]) -> None:
    """Lay `changes` (as changes_against makes them) down on a copy of the base."""
    for change in changes:
        target = safe_join(root, change["path"])
        if os.path.islink(target) or (os.path.lexists(target) and not os.path.isdir(target)):
            os.unlink(target)
        elif os.path.isdir(target):
            _remove_tree(target)  # a file where the base had a directory
        if change["op"] == "delete":
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if change["op"] == "symlink":
            os.symlink(change["target"], target)
            continue
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                     0o755 if change.get("executable") else 0o644)  # fmt: skip
        try:
            data = base64.b64decode(change["data"])
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def _remove_tree(path: str) -> None:
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                os.unlink(full)
            else:
                os.rmdir(full)
    os.rmdir(path)


def listing(tree: dict[str, Any], *, limit: int = 2000) -> list[dict[str, Any]]:
    """The tree (a snapshot) as an agent first sees it: paths and sizes, .git left out."""
    entries = []
    for path, (kind, size, *_times_and_inode) in sorted(tree.items()):
        if _in_git(path):
            continue
        entries.append({"path": path, "size": size, "kind": "symlink" if kind == stat.S_IFLNK else "file"})
        if len(entries) >= limit:
            break
    return entries
