"""Prepared environments: a repository task's tree with its setup done, frozen, shared
read-only by every session of that version.

An environment is built once per (tree, setup commands, sandbox interpreter): the
files written, a git repository made of them holding one commit and nothing else (no
reflog, no other ref, no object of any fix), the setup commands run in a sandbox
with no network, then every file made read-only and owned by the host. Sessions
copy it into a tmpfs of their own (sessions/sandbox.py). Environments are cached
under one directory, keyed by their hash, and evicted least recently used first
when the cache passes its size; one in use by a session is never evicted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.sandbox.bwrap import bwrap_path, launch, sandbox_python, stop
from evaluation.sandbox.errors import SandboxFailure

HASH_SCHEME = "session-environment/v1"
BASE_COMMIT_DATE = "2000-01-01T00:00:00+0000"  # the base commit's hash is the tree's, nothing else
SETUP_TIMEOUT_S = 600.0
SETUP_SCRATCH_BYTES = 512 * 1024 * 1024


class PreparationFailed(Exception):
    """The task's own setup failed (a command exited non-zero, or ran out of time): a
    fault of the task, not of the platform."""

    def __init__(self, message: str, *, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class EnvironmentSpec:
    """What an environment is made of. `files` maps a relative path to its bytes, or to
    (bytes, executable)."""

    files: dict[str, bytes | tuple[bytes, bool]]
    setup_commands: tuple[str, ...] = ()
    python: str = field(default_factory=sandbox_python)

    def digest(self) -> str:
        entries = []
        for path, value in self.files.items():
            data, executable = _content(value)
            entries.append((path, hashlib.sha256(data).hexdigest(), executable))
        return environment_digest(entries, self.setup_commands, self.python)


def environment_digest(entries: Iterable[tuple[str, str, bool]], setup_commands: Iterable[str], python: str) -> str:
    """The hash an environment is cached under, from (path, sha256 of the bytes,
    executable) of each file: a caller holding a manifest computes it without the bytes."""
    digest = hashlib.sha256(HASH_SCHEME.encode() + b"\0")
    for path, sha256, executable in sorted(entries):
        digest.update(f"{path}\0{int(executable)}\0{sha256}\0".encode())
    digest.update(json.dumps(list(setup_commands)).encode() + b"\0" + python.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class PreparedEnvironment:
    digest: str
    root: Path  # holds tree/ (the frozen tree), meta.json and the lock file

    @property
    def tree(self) -> Path:
        return self.root / "tree"

    def meta(self) -> dict:
        return json.loads((self.root / "meta.json").read_text())

    def acquire(self) -> int:
        """A shared lock on the environment, held until the descriptor is closed."""
        fd = os.open(self.root / "lock", os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd


def _content(value: bytes | tuple[bytes, bool]) -> tuple[bytes, bool]:
    return value if isinstance(value, tuple) else (value, False)


DEFAULT_ROOT = Path("/var/tmp/taskplatform-session-environments")


class EnvironmentCache:
    def __init__(self, root: Path = DEFAULT_ROOT, *, max_bytes: int = 4 << 30) -> None:
        self.root = Path(root).absolute()
        self.max_bytes = max_bytes
        if os.geteuid() == 0:
            # Sandboxes run as uids of their own, and bwrap reaches the tree as them.
            for parent in self.root.parents:
                if parent.exists() and not os.stat(parent).st_mode & 0o001:
                    raise ValueError(
                        f"environments under {self.root} are out of the sandboxes' reach: "
                        f"{parent} is not searchable by other users (choose one under /var/tmp)"
                    )
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)  # noqa: S103 - sandbox uids traverse it to their read-only bind

    def find(self, digest: str) -> PreparedEnvironment | None:
        """The environment `digest` names, if this cache holds it."""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return None
        target = self.root / digest
        if not (target / "meta.json").exists():
            return None
        os.utime(target / "meta.json")
        return PreparedEnvironment(digest, target)

    def get(self, spec: EnvironmentSpec) -> PreparedEnvironment:
        """The environment for `spec`, built now if no one has built it; builders of the
        same spec wait for one another rather than build twice."""
        digest = spec.digest()
        target = self.root / digest
        if (target / "meta.json").exists():
            os.utime(target / "meta.json")  # last use, for eviction
            return PreparedEnvironment(digest, target)
        lock_fd = os.open(self.root / f".{digest}.building", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            if not (target / "meta.json").exists():
                self._build(spec, digest, target)
        finally:
            os.close(lock_fd)
        self.evict(keep=digest)
        return PreparedEnvironment(digest, target)

    def _build(self, spec: EnvironmentSpec, digest: str, target: Path) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=self.root))
        os.chmod(staging, 0o755)  # noqa: S103 - the setup sandbox's uid reaches the tree through it
        try:
            tree = staging / "tree"
            tree.mkdir()
            write_tree(tree, spec.files)
            make_base_repository(tree)
            started = time.monotonic()
            log = run_setup(tree, spec.setup_commands) if spec.setup_commands else ""
            freeze(tree)
            meta = {"digest": digest, "files": len(spec.files), "bytes": tree_bytes(tree),
                    "setup_commands": list(spec.setup_commands), "setup_s": round(time.monotonic() - started, 3),
                    "setup_log": log[-20000:], "built_at": time.time()}  # fmt: skip
            (staging / "lock").write_bytes(b"")
            (staging / "meta.json").write_text(json.dumps(meta, indent=1))
            staging.rename(target)
        except BaseException:
            _force_remove(staging)
            raise

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, path) of every environment in the cache."""
        found = []
        for meta in self.root.glob("*/meta.json"):
            try:
                found.append((meta.stat().st_mtime, json.loads(meta.read_text())["bytes"], meta.parent))
            except (OSError, ValueError, KeyError):
                continue
        return found

    def evict(self, *, keep: str | None = None) -> list[str]:
        """Remove the least recently used environments until the cache fits its size;
        an environment a session holds is skipped. Returns the digests removed."""
        entries = sorted(self.entries())
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, path in entries:
            if total <= self.max_bytes:
                break
            if path.name == keep:
                continue
            fd = os.open(path / "lock", os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # in use
            try:
                doomed = path.with_name(f".evicted-{path.name}-{os.getpid()}")
                path.rename(doomed)  # out of sight first: no session can start on half of it
            finally:
                os.close(fd)
            _force_remove(doomed)
            total -= size
            removed.append(path.name)
        return removed


def _safe_relative(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\0" in path:
        raise ValueError(f"{path!r} is not a relative path inside the tree")
    if parts[0] == ".git":
        raise ValueError(f"{path!r}: the tree may not carry a .git directory of its own")
    return path


def write_tree(root: Path, files: dict[str, bytes | tuple[bytes, bool]]) -> None:
    for path in sorted(files):
        data, executable = _content(files[path])
        target = root / _safe_relative(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, 0o755 if executable else 0o644)


def _git(tree: Path, *args: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tree.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "task", "GIT_AUTHOR_EMAIL": "task@platform.invalid",
           "GIT_COMMITTER_NAME": "task", "GIT_COMMITTER_EMAIL": "task@platform.invalid",
           "GIT_AUTHOR_DATE": BASE_COMMIT_DATE, "GIT_COMMITTER_DATE": BASE_COMMIT_DATE}  # fmt: skip
    completed = subprocess.run(["git", *args], cwd=tree, env=env, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise SandboxFailure(f"git {' '.join(args)} failed: {completed.stderr[-1000:]}", anomaly="setup_failed")


def make_base_repository(tree: Path) -> None:
    """One commit of the tree, and no history: the reflog and hooks go, so nothing in
    .git leads anywhere but to the base state."""
    if shutil.which("git") is None:
        raise SandboxFailure("git is not installed: repository sessions need it", anomaly="backend_missing")
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "--no-verify", "--allow-empty", "-m", "base")
    for leftover in ("logs", "hooks", "ORIG_HEAD", "description", "COMMIT_EDITMSG"):
        _force_remove(tree / ".git" / leftover)


def run_setup(tree: Path, commands: tuple[str, ...]) -> str:
    """Run the setup commands in a sandbox with the tree writable and no network;
    return their output. Raises PreparationFailed on the first that fails."""
    if bwrap_path() is None:
        raise SandboxFailure("bubblewrap (bwrap) is not installed", anomaly="backend_missing")
    script = "exec 2>&1\nset -e\n" + "".join(f"echo '$ '{_shell_quote(command)}\n{command}\n" for command in commands)
    command = [
        bwrap_path() or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev",
        "--size", str(SETUP_SCRATCH_BYTES), "--tmpfs", "/tmp", "--bind", str(tree), "/repo", "--chdir", "/repo",
        "--dir", "/opt/bin", "--symlink", "/usr/bin/python3", "/opt/bin/python",
        "--clearenv", "--setenv", "PATH", "/opt/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--cap-drop", "ALL", "--", "/bin/bash", "-c", script,
    ]  # fmt: skip
    with tempfile.TemporaryFile() as output:
        return _run_setup_sandbox(tree, command, output)


def _run_setup_sandbox(tree: Path, command: list[str], output: Any) -> str:
    owner = os.stat(tree).st_uid
    # The setup runs as a sandbox uid the lease picks at launch: the tree is open to it
    # for the setup's length, then everything in it is the host's again (freeze).
    _chmod_tree(tree, writable=True)
    process, lease, _ = launch(command, slot=0, stdin=subprocess.DEVNULL, stdout=output, memory_cgroup=False)
    try:
        try:
            code = process.wait(timeout=SETUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop(process)
            raise PreparationFailed(f"the setup commands ran past {SETUP_TIMEOUT_S:.0f} s", log=_read(output)) from None
    finally:
        stop(process)
        if lease is not None:
            lease.release()
        _chown_tree(tree, owner)
        _chmod_tree(tree, writable=False)
    log = _read(output)
    if code != 0:
        raise PreparationFailed(f"a setup command failed (exit status {code})", log=log)
    return log


def _chmod_tree(tree: Path, *, writable: bool) -> None:
    for dirpath, _dirnames, filenames in os.walk(tree):
        os.chmod(dirpath, 0o777 if writable else 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                mode = os.lstat(path).st_mode & 0o777
                os.chmod(path, mode | 0o666 if writable else mode & 0o755)


def _chown_tree(tree: Path, uid: int) -> None:
    if os.geteuid() != 0:
        return  # not root: the setup ran as this user, and everything is ours already
    for dirpath, dirnames, filenames in os.walk(tree):
        os.chown(dirpath, uid, uid, follow_symlinks=False)
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _read(handle: Any) -> str:
    handle.seek(0)
    return handle.read()[-200_000:].decode("utf-8", "replace")


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def freeze(tree: Path) -> None:
    """Readable by every sandbox uid, writable by none (only the host's owner). The modes
    are the ones a session's copy starts with, so files stay writable to their owner."""
    for dirpath, _dirnames, filenames in os.walk(tree):
        for name in filenames:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, (mode & 0o755) | 0o644)
        os.chmod(dirpath, 0o755)  # noqa: S103 - read by every session's uid, written by none


def tree_bytes(tree: Path) -> int:
    total = 0
    for dirpath, _dirnames, filenames in os.walk(tree):
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _force_remove(path: Path) -> None:
    if not os.path.lexists(path):
        return
    if path.is_dir() and not path.is_symlink():
        for dirpath, _dirnames, _filenames in os.walk(path):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
