"""Repository tasks played as agent episodes on the session engine: a patch applied with
`git apply` inside the session, then the verdict in a fresh sandbox. What the
synthesis and the repository catalogue tests use to show a reference fixes its task,
and that the task's tree (or an adversarial patch) does not."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec, PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.session import Session
from evaluation.sandbox.sessions.verdict import Verdict, VerdictSpec

LIMITS = SessionLimits(step_timeout_s=30.0, idle_timeout_s=120.0, lease_s=300.0, tree_bytes=32 * 1024 * 1024)


@contextmanager
def scratch_cache() -> Iterator[EnvironmentCache]:
    """An environment cache the sandbox uids can reach (pytest's tmp_path is private to
    root), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="test-repository-episodes-", dir="/var/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - sandboxes bind trees under it as other uids
    try:
        yield EnvironmentCache(root)
    finally:
        for dirpath, _dirnames, _filenames in os.walk(root):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(root, ignore_errors=True)


def prepare(cache: EnvironmentCache, files: dict[str, tuple[bytes, bool]]) -> PreparedEnvironment:
    return cache.get(EnvironmentSpec(files=dict(files)))


def verdict_spec(repository: dict[str, Any]) -> VerdictSpec:
    """From a repository object in the raw form (fail_to_pass, pass_to_pass, hidden_test_files)."""
    return VerdictSpec(
        fail_to_pass=tuple(repository["fail_to_pass"]),
        pass_to_pass=tuple(repository.get("pass_to_pass", ())),
        hidden=dict(repository.get("hidden_test_files") or {}),
        protected=tuple(repository.get("protected_paths") or ("tests/**",)),
        timeout_s=60.0,
    )


def play(environment: PreparedEnvironment, spec: VerdictSpec, patch: str | None) -> Verdict:
    """An episode that applies `patch` (none: submits the tree as it is) and submits."""
    session = Session(environment=environment, limits=LIMITS, verdict_spec=spec)
    session.provision()
    try:
        if patch:
            session.execute(seq=1, action={"kind": "write_file", "path": "/tmp/fix.diff", "content": patch})
            applied = session.execute(seq=2, action={"kind": "bash", "command": "git apply /tmp/fix.diff"})
            assert applied["exit_code"] == 0, applied["stderr"]
        return session.submit()
    finally:
        session.close()
