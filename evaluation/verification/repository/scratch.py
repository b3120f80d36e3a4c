"""A throwaway git repository on the host: a task's tree committed once, patches applied
to it and written from it by git itself.

Patches the pipeline makes (mutants of the reference, test-tampering probes) are laid
down in a session with `git apply`, as an agent would; made by `git diff` from a real
tree, they apply there exactly. No user or system git configuration is read, and
nothing leaves the scratch directory, which is removed on close.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from tasks_app.repository.patches import git_binary

GIT_TIMEOUT_S = 60
COMMIT_DATE = "2000-01-01T00:00:00+0000"


class PatchRefused(Exception):
    """git apply refused a patch; the message is git's."""


class ScratchRepository:
    """Use as a context manager: the tree is written and committed on entry, the
    directory removed on exit."""

    def __init__(self, files: Mapping[str, tuple[bytes, bool]]) -> None:
        self.files = files
        self.root = Path()
        self._scratch = ""

    def __enter__(self) -> ScratchRepository:
        self._git_path = git_binary()
        self._scratch = tempfile.mkdtemp(prefix="repo-verify-")
        self.root = Path(self._scratch) / "tree"
        self.root.mkdir()
        try:
            for path, (data, executable) in self.files.items():
                self.write(path, data)
                os.chmod(self.root / path, 0o755 if executable else 0o644)
            self._git("init", "-q", "-b", "main")
            self._git("add", "-A")
            self._git("commit", "-q", "--no-verify", "--allow-empty", "-m", "base")
        except BaseException:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _environment(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._scratch,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CEILING_DIRECTORIES": self._scratch,
            "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "verification", "GIT_AUTHOR_EMAIL": "verification@platform.invalid",
            "GIT_COMMITTER_NAME": "verification", "GIT_COMMITTER_EMAIL": "verification@platform.invalid",
            "GIT_AUTHOR_DATE": COMMIT_DATE, "GIT_COMMITTER_DATE": COMMIT_DATE,
        }  # fmt: skip

    def _git(self, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
        # A fixed argv; a patch goes in on stdin, so nothing of a task reaches a shell.
        done = subprocess.run(
            [self._git_path, "-c", "core.quotepath=off", *args],
            cwd=self.root,
            env=self._environment(),
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode('utf-8', 'replace')[-600:]}")
        return done

    def _target(self, path: str) -> Path:
        parts = path.split("/")
        if not path or path.startswith("/") or any(part in ("", ".", "..", ".git") for part in parts):
            raise ValueError(f"{path!r} is not a path inside the tree")
        return self.root.joinpath(*parts)

    def read(self, path: str) -> bytes | None:
        target = self._target(path)
        return target.read_bytes() if target.is_file() else None

    def write(self, path: str, data: bytes | None) -> None:
        """Write a file (directories made as needed); None deletes it."""
        target = self._target(path)
        if data is None:
            target.unlink(missing_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def apply(self, patch: str) -> None:
        """Apply `patch` to the working tree, as the session will."""
        done = self._git("apply", "--whitespace=nowarn", "-", stdin=patch.encode("utf-8"), check=False)
        if done.returncode != 0:
            raise PatchRefused(done.stderr.decode("utf-8", "replace").strip() or f"git apply exited {done.returncode}")

    def changed_paths(self) -> list[str]:
        """Files of the working tree that differ from the base, deleted ones left out."""
        self._git("add", "-A")
        done = self._git("diff", "--cached", "--no-renames", "--diff-filter=d", "--name-only", "-z")
        return [path for path in done.stdout.decode("utf-8", "surrogateescape").split("\0") if path]

    def hunks(self, path: str) -> str:
        """The base-to-working-tree diff of one file, without context lines."""
        self._git("add", "-A")
        return self._git("diff", "--cached", "--no-renames", "--no-color", "-U0", "--", path).stdout.decode(
            "utf-8", "replace"
        )

    def patch(self) -> str:
        """The working tree's changes against the base, as one patch `git apply` takes.
        UnicodeDecodeError when a changed text file is not UTF-8 (a patch is text)."""
        self._git("add", "-A")
        done = self._git("diff", "--cached", "--no-renames", "--no-color", "--no-ext-diff", "--binary")
        return done.stdout.decode("utf-8")

    def reset(self) -> None:
        """Back to the base: every change and every new file gone."""
        self._git("reset", "-q", "--hard", "HEAD")
        self._git("clean", "-fdqx")
