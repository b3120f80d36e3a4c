"""Where a synthesis starts: a project's files, read from a folder, an sdist, or PyPI.

Whatever the source, the result is the same plain map of path -> (bytes, executable),
held to the repository caps of tasks_app (TASKS_REPO_MAX_*) before anything runs:
a tree the platform would refuse as a task is refused here, naming the cap, rather
than after minutes of mutant runs. What a task never needs (VCS folders, caches,
bytecode, links) is left out and listed, and so is a file over the one-file cap.

PyPI is read through its JSON API with urllib, never `pip download`: pip builds an
sdist's metadata to resolve it, which runs the package's setup.py on this host.
Here the archive is only downloaded, checked against the digest PyPI states, and
read member by member with the archive reader uploads use (no extraction to disk).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from tasks_app.errors import DomainError
from tasks_app.repository.paths import BadPath, normalise_path
from tasks_app.repository.reading import ArchiveProblem, Limits, read_members

Files = dict[str, tuple[bytes, bool]]

# Never part of a task's tree: version control, caches and build output.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox",
    ".venv", "venv", ".eggs", "build", "dist", "node_modules", ".idea", ".vscode",
})  # fmt: skip
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".so", ".egg-info", ".dist-info")
SKIPPED_NAMES = frozenset({".DS_Store", "Thumbs.db"})
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
PYPI_TIMEOUT_S = 30
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:==([A-Za-z0-9._+!-]+))?$")


class SynthesisRefused(DomainError):
    """The input cannot be made into tasks; the message says why and what to do."""

    code = "synthesis_refused"


@dataclass
class SourceTree:
    name: str  # the project's name: slugs and tags start with it
    files: Files
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def _skip_reason(parts: list[str]) -> str | None:
    for part in parts[:-1]:
        if part in SKIPPED_DIRS or part.endswith(SKIPPED_SUFFIXES):
            return f"inside {part}/"
    name = parts[-1]
    if name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES):
        return "cache or build output"
    return None


class _Collector:
    """Adds files one at a time, holding the tree to the repository caps."""

    def __init__(self, name: str) -> None:
        self.tree = SourceTree(name=name, files={})
        self.total = 0

    def add(self, raw_path: str, data: bytes, executable: bool) -> None:
        parts = raw_path.split("/")
        reason = _skip_reason(parts)
        if reason:
            self.tree.skipped.append((raw_path, reason))
            return
        try:
            path = normalise_path(raw_path)
        except BadPath as exc:
            self.tree.skipped.append((raw_path, str(exc)))
            return
        if len(data) > settings.TASKS_REPO_MAX_FILE_BYTES:
            self.tree.skipped.append((path, f"over TASKS_REPO_MAX_FILE_BYTES ({len(data)} bytes)"))
            return
        self.tree.files[path] = (data, executable)
        self.total += len(data)
        if len(self.tree.files) > settings.TASKS_REPO_MAX_FILES:
            raise SynthesisRefused(
                f"The project has more than {settings.TASKS_REPO_MAX_FILES} files (TASKS_REPO_MAX_FILES): "
                "too large for a repository task."
            )
        if self.total > settings.TASKS_REPO_MAX_BYTES:
            raise SynthesisRefused(
                f"The project's files pass {settings.TASKS_REPO_MAX_BYTES} bytes (TASKS_REPO_MAX_BYTES): "
                "too large for a repository task."
            )


def tree_from_folder(folder: Path | str) -> SourceTree:
    """Every file under `folder` that a task may hold; links are left out (a tree holds none)."""
    root = Path(folder)
    if not root.exists():
        raise SynthesisRefused(f"No such folder: {root}.")
    if not root.is_dir():
        raise SynthesisRefused(f"{root} is not a folder; pass an sdist with --sdist.")
    collector = _Collector(root.resolve().name)
    for dirpath, dirnames, filenames in os.walk(root):
        # Pruned here, so a large .git or .venv is never even walked.
        kept = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.endswith(SKIPPED_SUFFIXES))
        relative_dir = Path(dirpath).relative_to(root)
        for pruned in sorted(set(dirnames) - set(kept)):
            collector.tree.skipped.append(((relative_dir / pruned).as_posix(), "version control, cache or build"))
        dirnames[:] = [d for d in kept if not (Path(dirpath) / d).is_symlink()]
        for name in sorted(filenames):
            full = Path(dirpath) / name
            relative = (relative_dir / name).as_posix()
            if full.is_symlink() or not full.is_file():
                collector.tree.skipped.append((relative, "a link or a special file"))
                continue
            collector.add(relative, full.read_bytes(), bool(full.stat().st_mode & 0o111))
    return collector.tree


def tree_from_sdist(archive: Path | str) -> SourceTree:
    """The files of an sdist (tar.gz, tar or zip), without its one top-level folder."""
    path = Path(archive)
    if not path.is_file():
        raise SynthesisRefused(f"No such sdist file: {path}.")
    data = path.read_bytes()
    try:
        members = [m for m in read_members(data, limits=Limits.from_settings()) if not m.is_dir]
    except ArchiveProblem as exc:
        where = f" (member {exc.member})" if exc.member else ""
        raise SynthesisRefused(f"{path.name} is not a readable sdist: {exc}{where}") from exc
    if not members:
        raise SynthesisRefused(f"{path.name} holds no files.")
    tops = {m.name.split("/", 1)[0] for m in members}
    strip = len(tops) == 1 and all("/" in m.name for m in members)
    name = tops.pop() if strip else re.sub(r"(\.tar\.gz|\.tgz|\.tar|\.zip)$", "", path.name)
    collector = _Collector(name)
    for member in members:
        collector.add(member.name.split("/", 1)[1] if strip else member.name, member.data, member.executable)
    return collector.tree


def sdist_from_pypi(requirement: str, dest: Path) -> Path:
    """Download the sdist of `NAME` or `NAME==VERSION` from PyPI into `dest`, checked
    against the sha256 PyPI lists for it. Needs the network; says so when it is not there."""
    match = REQUIREMENT.match(requirement.strip())
    if not match:
        raise SynthesisRefused(f"{requirement!r} is not NAME or NAME==VERSION.")
    name, version = match.groups()
    url = PYPI_JSON.format(name=name) if not version else f"https://pypi.org/pypi/{name}/{version}/json"
    try:
        with urllib.request.urlopen(url, timeout=PYPI_TIMEOUT_S) as response:  # noqa: S310 - a fixed https URL
            release = json.load(response)
        sdists = [u for u in release.get("urls", []) if u.get("packagetype") == "sdist"]
        if not sdists:
            raise SynthesisRefused(f"PyPI lists no sdist for {requirement} (wheels only); pass a folder with --path.")
        chosen = sdists[0]
        with urllib.request.urlopen(chosen["url"], timeout=PYPI_TIMEOUT_S) as response:  # noqa: S310
            body = response.read(settings.TASKS_REPO_MAX_ARCHIVE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise SynthesisRefused(f"PyPI answered {exc.code} for {requirement}: is the name (and version) right?") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise SynthesisRefused(
            f"PyPI is not reachable from this machine ({exc}); download the sdist where the network is "
            "reachable and pass it with --sdist FILE."
        ) from exc
    if len(body) > settings.TASKS_REPO_MAX_ARCHIVE_BYTES:
        raise SynthesisRefused(f"The sdist of {requirement} is over TASKS_REPO_MAX_ARCHIVE_BYTES.")
    expected = chosen.get("digests", {}).get("sha256")
    if expected and hashlib.sha256(body).hexdigest() != expected:
        raise SynthesisRefused(f"The sdist of {requirement} does not match the sha256 PyPI lists for it.")
    target = dest / os.path.basename(chosen["filename"])
    target.write_bytes(body)
    return target
