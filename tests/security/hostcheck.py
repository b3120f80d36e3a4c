"""What the security suite checks on the host around every hostile run.

A hostile program that got out would show here: a service down, a file written
or changed outside the temp dirs, a process of a sandbox alive after its run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
# Every file a hostile program tries to create outside its scratch directory is
# named with this marker, so that finding one anywhere on the host is proof.
MARKER = "sbxhostile"
SERVICES = {"postgresql": ("127.0.0.1", 5432), "redis": ("127.0.0.1", 6379)}
_SKIP_DIRS = {".venv", ".git", "node_modules", "var", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def _harness_copy() -> Path | None:
    try:
        from evaluation.sandbox.harness_files import readable_copy

        return readable_copy()
    except Exception:  # the harness layout moved on: the other checks still stand
        return None


def watched_dirs() -> list[Path]:
    dirs = [Path(p) for p in ("/", "/etc", "/usr", "/usr/bin", "/usr/lib", "/usr/lib/python3/dist-packages", "/tmp")]
    dirs += [Path("/root"), Path("/var/lib/postgresql"), PROJECT, PROJECT / "config", PROJECT / "var"]
    harness = _harness_copy()
    if harness is not None:
        dirs.append(harness)
    return [d for d in dirs if d.is_dir()]


def key_files() -> list[Path]:
    files = [Path(p) for p in ("/etc/passwd", "/etc/shadow", "/etc/group", "/etc/hosts", "/usr/bin/python3")]
    files += [PROJECT / "manage.py", PROJECT / "config" / "settings.py", PROJECT / "pyproject.toml"]
    harness = _harness_copy()
    if harness is not None:
        files += sorted(harness.iterdir())
    return [f.resolve() for f in files if f.exists()]


def project_files() -> dict[str, int]:
    """path -> owner uid of every file in the project outside var/ and the venv."""
    found: dict[str, int] = {}
    for root, dirs, files in os.walk(PROJECT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in files:
            path = os.path.join(root, name)
            try:
                found[path] = os.lstat(path).st_uid
            except OSError:
                continue
    return found


@dataclass
class HostSnapshot:
    mtimes: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)

    @classmethod
    def take(cls) -> HostSnapshot:
        return cls(mtimes={str(f): f.stat().st_mtime_ns for f in key_files()}, files=project_files())


def service_problems() -> list[str]:
    problems = []
    for name, address in SERVICES.items():
        try:
            with socket.create_connection(address, timeout=3.0):
                pass
        except OSError as exc:
            problems.append(f"{name} at {address[0]}:{address[1]} refuses connections: {exc}")
    return problems


def marker_files() -> list[str]:
    found = []
    for directory in watched_dirs():
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found += [str(directory / name) for name in names if MARKER in name]
    return found


def file_problems(before: HostSnapshot) -> list[str]:
    problems = [f"a hostile program's file is on the host: {path}" for path in marker_files()]
    for path, mtime in before.mtimes.items():
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            problems.append(f"{path} disappeared")
            continue
        if now != mtime:
            problems.append(f"{path} was modified during the run")
    me = os.getuid()
    for path, uid in project_files().items():
        # Other engineers edit the project while this runs: a new file is the
        # sandbox's only if a sandbox uid owns it or it bears the marker.
        if path not in before.files and (uid != me or MARKER in path):
            problems.append(f"new file in the project: {path} (uid {uid})")
    return problems


# -- processes ------------------------------------------------------------------------------------


def process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (uid, ppid, args), from ps."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,uid=,args="], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3:
            table[int(parts[0])] = (int(parts[2]), int(parts[1]), parts[3] if len(parts) > 3 else "")
    return table


def subtree(table: dict[int, tuple[int, int, str]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (_uid, ppid, _args) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, frontier = set(), [root]
    while frontier:
        pid = frontier.pop()
        if pid in found:
            continue
        found.add(pid)
        frontier += children.get(pid, [])
    return found


def idle_sandboxes(pool: Any) -> list[Any]:
    with pool._cond:  # the pool's own idle list: the sandboxes at rest between runs
        return [sandbox for sandbox, _since in pool._idle]


def sandbox_root_pid(sandbox: Any) -> int | None:
    process = getattr(sandbox, "process", None)
    return getattr(process, "pid", None)


# An idle sandbox template: bwrap and the template (its PID 1), nothing forked from it.
TEMPLATE_AT_REST = 2


def idle_templates() -> list[Any]:
    """The templates cold runs fork fresh sandboxes from, between runs (they live on
    after a cold run, so they are no stray; what they forked must be gone)."""
    from evaluation.sandbox.templates import shelf

    return shelf.idle_templates()


def rest_shape(pool: Any, settle_s: float = 5.0) -> int:
    """How many processes a started sandbox holds at rest (bwrap, its init, the agent...).
    A sandbox greets before its zygote has forked the spare it keeps at rest, so the
    shape is read once two readings 50 ms apart agree."""
    deadline = time.monotonic() + settle_s
    last: set[int] = set()
    while True:
        table = process_table()
        sizes = {len(subtree(table, pid)) for s in idle_sandboxes(pool) if (pid := sandbox_root_pid(s))}
        if (len(sizes) == 1 and sizes == last) or time.monotonic() > deadline:
            break
        last = sizes
        time.sleep(0.05)
    assert len(sizes) == 1, f"idle sandboxes differ in shape: {sizes}"
    return sizes.pop()


def sandbox_survivors(pool: Any, at_rest: int, *, exclude: tuple[int, ...] = (), wait_s: float = 5.0) -> list[str]:
    """Processes of this test process's sandboxes that are not an idle sandbox at rest.

    Every sandbox process descends from this process (bwrap is our child, and
    everything inside its PID namespace descends from bwrap), so a survivor of
    a run cannot hide by reparenting. Sandboxes retired after an anomaly are
    torn down in the background: give them `wait_s` to go.
    """
    deadline = time.monotonic() + wait_s
    while True:
        table = process_table()
        ours = {pid for pid in subtree(table, os.getpid()) if table[pid][0] != os.getuid()}
        for root in exclude:
            ours -= subtree(table, root)
        problems = []
        for sandbox in idle_sandboxes(pool):
            root = sandbox_root_pid(sandbox)
            if root is None or root not in table:
                continue
            tree = subtree(table, root)
            ours -= tree
            if len(tree) != at_rest:
                listing = "; ".join(f"{pid} {table[pid][2][:80]}" for pid in sorted(tree))
                problems.append(f"idle sandbox {sandbox.id} holds {len(tree)} processes, {at_rest} at rest: {listing}")
        for template in idle_templates():
            root = sandbox_root_pid(template)
            if root is None or root not in table:
                continue
            tree = subtree(table, root)
            ours -= tree
            if len(tree) != TEMPLATE_AT_REST:  # what a fresh sandbox forked from it left behind
                listing = "; ".join(f"{pid} {table[pid][2][:80]}" for pid in sorted(tree))
                problems.append(f"idle sandbox template holds {len(tree)} processes, {TEMPLATE_AT_REST} at rest: "
                                f"{listing}")  # fmt: skip
        problems += [
            f"stray sandbox process {pid} (uid {table[pid][0]}): {table[pid][2][:120]}" for pid in sorted(ours)
        ]
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.05)
