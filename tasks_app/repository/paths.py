"""Paths inside a repository task's tree, and the glob patterns that protect some of them.

A path is checked once, here, whether it came from JSON, an archive member or a
test node id, so every way in refuses the same paths with the same words.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_PATH_BYTES = 1024
MAX_COMPONENT_BYTES = 255

# Where the task does not say: tests, what configures pytest, and CI. The verdict
# restores these from the pristine tree, so an agent that rewrites a test or a
# conftest.py gains nothing (DESIGN.md, "Agent sessions").
DEFAULT_PROTECTED_PATHS = (
    "tests/**",
    "test/**",
    "test_*.py",
    "**/test_*.py",
    "*_test.py",
    "**/*_test.py",
    "conftest.py",
    "**/conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    ".github/**",
)


class BadPath(ValueError):
    """A path that cannot be a file of the tree; the message says why."""


def normalise_path(raw: object) -> str:
    """The normal form of a relative POSIX path (`./a//b` -> `a/b`); BadPath if it has none.

    Refused: absolute paths, `..`, a `.git` component (any case: the verdict's git
    would take it for its own metadata), backslashes (a Windows separator on one
    machine, a file name on another), control characters and NUL.
    """
    if not isinstance(raw, str):
        raise BadPath(f"Expected a path string, got {type(raw).__name__}.")
    if not raw:
        raise BadPath("The path is empty.")
    if "\x00" in raw:
        raise BadPath("The path contains a NUL character.")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise BadPath("The path contains a control character (a newline, a tab, ...).")
    if "\\" in raw:
        raise BadPath("The path contains a backslash; use / between directories.")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise BadPath("The path is absolute; paths are relative to the repository root.")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts:
        raise BadPath("The path names the repository root, not a file.")
    for part in parts:
        if part == "..":
            raise BadPath("The path contains '..'; it must stay inside the repository.")
        if part.lower() == ".git":
            raise BadPath("The path has a .git component; the tree may not carry git metadata.")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise BadPath(f"A path component is longer than {MAX_COMPONENT_BYTES} bytes.")
    path = "/".join(parts)
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise BadPath("The path contains an unpaired surrogate; it must be valid Unicode.") from exc
    if size > MAX_PATH_BYTES:
        raise BadPath(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    return path


def directory_conflicts(paths: list[str]) -> list[tuple[str, str]]:
    """Pairs (file, path under it): a tree cannot hold both `a` as a file and `a/b`."""
    files = set(paths)
    conflicts = []
    for path in sorted(files):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix in files:
                conflicts.append((prefix, path))
                break
    return conflicts


def check_pattern(raw: object) -> str:
    """A protected-path glob, stripped; BadPath if it could never name a file of the tree."""
    if not isinstance(raw, str):
        raise BadPath(f"Expected a glob pattern string, got {type(raw).__name__}.")
    pattern = raw.strip()
    if not pattern:
        raise BadPath("The pattern is blank.")
    if len(pattern) > 300:
        raise BadPath("The pattern is longer than 300 characters.")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in pattern) or "\\" in pattern:
        raise BadPath("The pattern contains a control character or a backslash.")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise BadPath("The pattern is absolute or contains '..'; patterns are relative to the repository root.")
    return pattern


@lru_cache(maxsize=512)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    # `*` and `?` stay inside one directory; `**` crosses them, and `**/` may match nothing,
    # so `**/conftest.py` also names the root's conftest.py. A trailing `/` means "everything under".
    if pattern.endswith("/"):
        pattern += "**"
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def is_protected(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(_pattern_regex(p).match(path) for p in patterns)
