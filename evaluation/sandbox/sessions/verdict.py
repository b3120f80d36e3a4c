"""The final verdict on an episode, in a fresh sandbox that never ran the episode.

1. The episode's changes (exported from its sandbox once every process in it was
   dead) are filtered: a change to a protected path, to a hidden test's path, or a
   link standing in for a directory of the base, is dropped, so those stay pristine.
2. A fresh session sandbox lays the rest over the pristine prepared tree.
3. The fail-to-pass and pass-to-pass tests run there with the verdict plugin; hidden
   tests come from the host, in memory. A test not reported as passed is failed.
4. The reward is 1.0 when every test passed and 0.0 otherwise; when the platform
   failed (the sandbox died or would not start, twice), it is None with the reason.
Nothing the episode wrote is read as a result: outcomes come from pytest's hooks
over a pipe, with a nonce, in a process that started from the pristine tree.
"""

from __future__ import annotations

import base64
import difflib
import fnmatch
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import SessionChannel, SessionSandbox

# Protected whatever a task says: what configures pytest or Python itself, and .git.
ALWAYS_PROTECTED = (
    "conftest.py", "**/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
    "sitecustomize.py", "**/sitecustomize.py", "usercustomize.py", "**/usercustomize.py",
    "*.pth", "**/*.pth", "*.dist-info/**", "**/*.dist-info/**", "*.egg-info/**", "**/*.egg-info/**",
    ".git", ".git/**",
)  # fmt: skip
VERDICT_ATTEMPTS = 2  # a sandbox that fails is the platform's fault: once more in a new one
MAX_DIFF_CHARS = 200_000


@dataclass(frozen=True)
class VerdictSpec:
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...] = ()
    hidden: dict[str, str] = field(default_factory=dict)  # path -> test source, never on the episode's disk
    protected: tuple[str, ...] = ()
    timeout_s: float = 300.0


@dataclass
class Verdict:
    reward: float | None
    status: str  # passed | failed | sandbox_error
    reason: str
    outcomes: dict[str, dict[str, Any]]
    applied: list[str]
    dropped: list[dict[str, str]]
    diff_sha256: str
    attempts: int = 1
    log: str = ""
    diff: str = ""  # the applied changes against the task's tree, unified (cut past MAX_DIFF_CHARS)

    def as_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "status": self.status, "reason": self.reason, "outcomes": self.outcomes,
                "applied": self.applied, "dropped": self.dropped, "diff_sha256": self.diff_sha256,
                "attempts": self.attempts, "log": self.log, "diff": self.diff}  # fmt: skip


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Glob match where `**/` may also match nothing (`**/conftest.py` matches a top-level
    conftest.py) and `*` crosses directories (fnmatch's own rule)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern):
            return True
        if pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:]):
            return True
        if pattern.endswith("/**") and path == pattern[:-3]:
            return True
    return False


def filter_changes(changes: list[dict[str, Any]], spec: VerdictSpec, base_dirs: set[str]) -> tuple[list, list]:
    """(changes to apply, [{path, why}] dropped)."""
    protected = (*ALWAYS_PROTECTED, *spec.protected)
    hidden_parents = {"/".join(path.split("/")[:i]) for path in spec.hidden for i in range(1, path.count("/") + 1)}
    kept, dropped = [], []
    for change in changes:
        path = change["path"]
        if matches(path, protected):
            dropped.append({"path": path, "why": "protected path: restored from the task"})
        elif path in spec.hidden:
            dropped.append({"path": path, "why": "a hidden test's path: the test comes from the task"})
        elif change["op"] == "symlink" and (path in base_dirs or path in hidden_parents):
            dropped.append({"path": path, "why": "a link in place of a directory of the task"})
        else:
            kept.append(change)
    return kept, dropped


def changes_digest(changes: list[dict[str, Any]]) -> str:
    """sha256 over the changes as applied: what the verdict judged, for reproducing it."""
    canonical = [
        {key: change.get(key) for key in ("path", "op", "sha256", "target", "executable")} for change in changes
    ]
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def unified_diff(environment: PreparedEnvironment, changes: list[dict[str, Any]]) -> str:
    """The changes as a curator reads them: a unified diff per text file, a line for a
    binary file, a link or a deletion."""
    parts: list[str] = []
    for change in changes:
        path = change["path"]
        base = environment.tree / path
        old = base.read_bytes() if base.is_file() and not base.is_symlink() else b""
        if change["op"] == "delete":
            parts.append(f"deleted: {path}\n")
            continue
        if change["op"] == "symlink":
            parts.append(f"link: {path} -> {change['target']}\n")
            continue
        new = base64.b64decode(change["data"])
        try:
            old_text, new_text = old.decode("utf-8"), new.decode("utf-8")
        except UnicodeDecodeError:
            parts.append(f"binary file changed: {path} ({len(new)} bytes, sha256 {change.get('sha256', '')[:12]})\n")
            continue
        lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                     f"a/{path}", f"b/{path}")  # fmt: skip
        parts.append("".join(lines))
    text = "".join(parts)
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n[... the diff is cut here ...]\n"


def base_directories(environment: PreparedEnvironment) -> frozenset[str]:
    return _directories(str(environment.tree))


@functools.lru_cache(maxsize=64)
def _directories(tree: str) -> frozenset[str]:
    """The directories of a prepared tree: walked once a process, not at every verdict
    (a prepared tree is frozen, and a rebuilt one gets a new path: its digest)."""
    root = Path(tree)
    return frozenset(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir() and not p.is_symlink())


def judge(environment: PreparedEnvironment, changes: list[dict[str, Any]], spec: VerdictSpec,
          limits: SessionLimits, *, sandbox_class: type[SessionChannel] = SessionSandbox,
          spares: Any = None) -> Verdict:  # fmt: skip
    kept, dropped = filter_changes(changes, spec, base_directories(environment))
    digest = changes_digest(kept)
    tests = [*spec.fail_to_pass, *spec.pass_to_pass]
    failure = ""
    for attempt in range(1, VERDICT_ATTEMPTS + 1):
        # A spare is as fresh as a new sandbox (no episode ever ran in it); a second try
        # after a failure starts its own.
        spare = spares.take(environment, limits) if spares is not None and attempt == 1 else None
        sandbox = spare or sandbox_class(environment, limits)
        try:
            if spare is not None:
                sandbox.apply(kept)
            else:
                sandbox.start(kept)
            answer = sandbox.verdict(tests=tests, hidden=dict(spec.hidden), timeout_s=spec.timeout_s)
        except SandboxFailure as exc:
            failure = f"{exc.anomaly}: {exc}"
            continue
        finally:
            sandbox.close()
        outcomes = answer["outcomes"]
        failed = [test for test in tests if outcomes[test]["outcome"] != "passed"]
        if answer.get("timed_out"):
            reason = f"the tests ran past {spec.timeout_s:.0f} s"
        elif failed:
            reason = f"{len(failed)} of {len(tests)} tests did not pass: {', '.join(failed[:5])}"
        else:
            reason = f"all {len(tests)} tests passed"
        log = (answer.get("stdout", "") + answer.get("stderr", ""))[-8000:]
        return Verdict(reward=0.0 if failed else 1.0, status="failed" if failed else "passed", reason=reason,
                       outcomes=outcomes, applied=[c["path"] for c in kept], dropped=dropped, diff_sha256=digest,
                       attempts=attempt, log=log, diff=unified_diff(environment, kept))  # fmt: skip
    return Verdict(reward=None, status="sandbox_error", reason=f"the verdict's sandbox failed twice: {failure}",
                   outcomes={}, applied=[c["path"] for c in kept], dropped=dropped, diff_sha256=digest,
                   attempts=VERDICT_ATTEMPTS)  # fmt: skip
