"""Checking that patches apply to a tree, with the tool the verdict will use: `git apply`.

A patch that `patch(1)` or a Python diff library would accept but `git apply`
refuses (or the other way round) would make a task whose reference fails at
verdict time, so the check runs git itself, in a scratch directory holding the tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from tasks_app.errors import Unavailable

GIT_TIMEOUT_S = 30
MAX_MESSAGE_CHARS = 600


@dataclass(frozen=True)
class TreeFile:
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class PatchCheck:
    applies: bool
    message: str = ""  # git's own words when it refuses
    paths: tuple[str, ...] = ()  # the paths the patch touches, when it applies


def git_binary() -> str:
    """The git executable; Unavailable (503) when the machine has none, which is the
    platform's fault, never the author's."""
    found = shutil.which("git")
    if not found:
        raise Unavailable(
            "git is not installed on this server, so patches cannot be checked; "
            "repository tasks need git (the verdict applies patches with `git apply`)."
        )
    return found


def _environment(scratch: str) -> dict[str, str]:
    # No user or system configuration, no repository above the scratch directory:
    # the answer must not depend on who runs the server or where.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": scratch,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": os.path.dirname(scratch),
        "LC_ALL": "C",
    }


def _write_tree(root: str, files: Mapping[str, TreeFile]) -> None:
    for path, entry in files.items():
        target = os.path.join(root, *path.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(entry.data)
        os.chmod(target, 0o755 if entry.executable else 0o644)


def patches_check(files: Mapping[str, TreeFile], patches: list[str]) -> list[PatchCheck]:
    """For each patch, whether `git apply --check` accepts it against `files`, and the
    paths it touches (from `--numstat`). The tree is written once for all patches:
    `--check` changes nothing."""
    git = git_binary()
    with tempfile.TemporaryDirectory(prefix="repo-check-") as scratch:
        tree = os.path.join(scratch, "tree")
        os.makedirs(tree)
        _write_tree(tree, files)
        env = _environment(scratch)
        return [_check_one(git, tree, env, patch) for patch in patches]


def _check_one(git: str, tree: str, env: dict[str, str], patch: str) -> PatchCheck:
    if not patch.strip():
        return PatchCheck(False, "The patch is empty.")
    try:
        # A fixed argv; the patch goes in on stdin, so nothing in it reaches a shell.
        done = subprocess.run(
            [git, "apply", "--check", "--numstat", "-z", "-"],
            cwd=tree,
            env=env,
            input=patch.encode("utf-8"),
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return PatchCheck(False, f"git apply did not finish within {GIT_TIMEOUT_S} s.")
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"git apply exited {done.returncode}."
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + " …"
        return PatchCheck(False, message)
    return PatchCheck(True, paths=_numstat_paths(done.stdout))


def _numstat_paths(raw: bytes) -> tuple[str, ...]:
    # With -z each record is "added\tdeleted\tpath\0", or for a rename
    # "added\tdeleted\t\0old\0new\0": both names count as touched.
    fields = raw.decode("utf-8", "replace").split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        record = fields[i]
        if not record:
            i += 1
            continue
        parts = record.split("\t", 2)
        if len(parts) == 3 and parts[2]:
            paths.append(parts[2])
            i += 1
        else:
            paths.extend(p for p in fields[i + 1 : i + 3] if p)
            i += 3
    return tuple(paths)
