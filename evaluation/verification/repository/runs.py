"""One execution of a repository version, run as an agent session on this worker.

Steps: find the version's prepared environment in this host's cache (or prepare it:
the tree, its git base, the setup commands); start a session on it; lay the patch
down as an agent would (write it to /tmp, `git apply` it with a bash step); submit;
take the verdict from its fresh sandbox. Reward 1.0 is `passed`, 0.0 `failed`, None
(the platform failed) `sandbox_error`, never counted as a wrong answer. A patch that
does not apply is the patch's failure; a setup command that fails is the task's
(`setup_error`, which BROKEN_SETUP reads on the reference's runs).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.agent import verdict_spec_from
from evaluation.sandbox.sessions.backends import sandbox_factory
from evaluation.sandbox.sessions.environments import (
    EnvironmentCache,
    EnvironmentSpec,
    PreparationFailed,
    PreparedEnvironment,
)
from evaluation.sandbox.sessions.host import PRUNE_EVERY_S
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.session import Session, SessionError, SessionInfraFailure
from evaluation.sandbox.sessions.verdict import Verdict
from evaluation.sandbox.types import OUTPUT_KEPT
from evaluation.verification.sessions.specs import digest_of, environment_files, verdict_body
from tasks_app.models import TaskVersion

PATCH_PATH = "/tmp/verification.patch"  # noqa: S108 - inside the session's own /tmp
APPLY_COMMAND = f"git apply --whitespace=nowarn {PATCH_PATH}"
# The limits an episode gets by default (the host agent's): the reference is judged as
# a rollout would be.
LIMITS = SessionLimits()
# A mutant's verdict is cut short (executions._wall_cap) but never below this: a
# session's pytest pays a start-up a program's run does not.
MUTANT_TIMEOUT_FLOOR_S = 10.0
# A setup that failed fails again: the other executions of the version are told so at
# once rather than each run the setup again, for this long.
SETUP_FAILURE_KEPT_S = 600.0

log = logging.getLogger(__name__)
_lock = threading.Lock()
_caches: dict[str, EnvironmentCache] = {}
_failed_setups: dict[str, tuple[float, PreparationFailed]] = {}
_pruned_at: dict[str, float] = {}  # backend: time.monotonic() of its last prune


def environment_cache() -> EnvironmentCache:
    """This host's cache of prepared environments (SESSIONS["ENVIRONMENTS_DIR"]), one a
    directory per process, shared with the sessions this process runs."""
    options = settings.SESSIONS
    root = str(options["ENVIRONMENTS_DIR"])
    with _lock:
        cache = _caches.get(root)
        if cache is None:
            cache = _caches[root] = EnvironmentCache(Path(root))
        cache.max_bytes = int(options["ENVIRONMENTS_MAX_BYTES"])
        return cache


def prepared_environment(version: TaskVersion) -> PreparedEnvironment:
    """The version's environment on this host, prepared now if it is not. Raises
    PreparationFailed (the task's setup failed) or SandboxFailure (the platform's)."""
    cache = environment_cache()
    digest = digest_of(version)
    found = cache.find(digest)
    if found is not None:
        return found
    with _lock:
        failed = _failed_setups.get(digest)
    if failed is not None and time.monotonic() - failed[0] < SETUP_FAILURE_KEPT_S:
        raise failed[1]
    commands = tuple(version.repository["setup_commands"])
    spec = EnvironmentSpec(files=dict(environment_files(version)), setup_commands=commands)
    try:
        return cache.get(spec)
    except PreparationFailed as exc:
        with _lock:
            _failed_setups[digest] = (time.monotonic(), exc)
        raise


def prune_environments(backend: str) -> None:
    """Let `backend` drop what it keeps for environments this host's cache evicted (a
    Docker image each), at most once a minute, as a session host's reaper does: a worker
    that only verifies would otherwise keep an image of every version it ever ran."""
    now = time.monotonic()
    with _lock:
        if now - _pruned_at.get(backend, -PRUNE_EVERY_S) < PRUNE_EVERY_S:
            return
        _pruned_at[backend] = now
    try:
        sandbox_factory(backend).prune_environments(environment_cache())
    except Exception as exc:  # the engine down: the next run tries again
        log.warning("could not prune the images of evicted environments: %s", exc)


def _outcome(status: str, wall_s: float, **result: Any) -> dict[str, Any]:
    return {"status": status, "result": {"kind": "repository", "status": status, **result}, "wall_s": wall_s,
            "cpu_s": None, "request_digest": ""}  # fmt: skip


def _sandbox_error(exc: BaseException, wall_s: float, **result: Any) -> dict[str, Any]:
    cause = exc.__cause__ if isinstance(exc, SessionInfraFailure) else exc
    anomaly = getattr(cause, "anomaly", "sandbox_failed")
    return _outcome("sandbox_error", wall_s, message=str(exc)[:2000], anomaly=anomaly, **result)


def repository_run(
    *, version: TaskVersion, code: str, verdict_cap_s: float | None = None, backend: str | None = None
) -> dict[str, Any]:
    """Run one patch against `version` in a session and judge it. Returns the execution's
    outcome: status, result (the verdict's outcomes per test, what was dropped, the log),
    wall_s (the verdict's time: what the time limit bounds)."""
    backend = backend or settings.SESSIONS["BACKEND"]
    started = time.monotonic()
    try:
        environment = prepared_environment(version)
    except PreparationFailed as exc:
        return _outcome("failed", time.monotonic() - started, backend=backend, outcomes={},
                        message=f"the task's setup failed: {exc}", setup_error=f"{exc}\n{exc.log[-4000:]}")  # fmt: skip
    except (SandboxFailure, OSError, ValueError) as exc:  # bwrap or git missing, a cache out of reach
        return _sandbox_error(exc, time.monotonic() - started, backend=backend)
    spec = verdict_spec_from(verdict_body(version))
    if verdict_cap_s is not None:
        spec = replace(spec, timeout_s=min(spec.timeout_s, max(verdict_cap_s, MUTANT_TIMEOUT_FLOOR_S)))
    facts = {"backend": backend, "environment": environment.digest, "verdict_timeout_s": spec.timeout_s}
    prune_environments(backend)
    session = Session(environment=environment, limits=LIMITS, verdict_spec=spec,
                      sandbox_class=sandbox_factory(backend))  # fmt: skip
    try:
        session.provision(statement=version.statement)
        if code:
            refused = _lay_down(session, code)
            if refused is not None:
                return _outcome("failed", time.monotonic() - started, **facts, message=refused, outcomes={},
                                patch_applies=False)  # fmt: skip
        judged_at = time.monotonic()
        verdict = session.submit()
        return _judged(verdict, time.monotonic() - judged_at, facts)
    except SessionInfraFailure as exc:
        return _sandbox_error(exc, time.monotonic() - started, **facts)
    except SessionError as exc:  # a state or limit the platform's own steps ran into
        return _sandbox_error(exc, time.monotonic() - started, **facts)
    finally:
        session.close()


def _lay_down(session: Session, code: str) -> str | None:
    """Write the patch into the session and `git apply` it; the reason when it did not
    apply (the patch's failure), None when it did."""
    written = session.execute(seq=1, action={"kind": "write_file", "path": PATCH_PATH, "content": code})
    if written.get("exit_code") != 0:
        return f"the patch could not be written into the session: {(written.get('stderr') or '')[-1000:]}"
    applied = session.execute(seq=2, action={"kind": "bash", "command": APPLY_COMMAND})
    if applied.get("exit_code") != 0:
        said = (applied.get("stderr") or applied.get("stdout") or "").strip()[-1500:]
        return f"the patch does not apply (git apply exited {applied.get('exit_code')}): {said}"
    return None


def _judged(verdict: Verdict, wall_s: float, facts: dict[str, Any]) -> dict[str, Any]:
    details = {"message": verdict.reason, "reward": verdict.reward, "outcomes": verdict.outcomes,
               "applied": verdict.applied, "dropped": verdict.dropped, "diff_sha256": verdict.diff_sha256,
               "attempts": verdict.attempts, "stdout": verdict.log[-OUTPUT_KEPT:], "stderr": "",
               "patch_applies": True, **facts}  # fmt: skip
    if verdict.reward is None:
        failure = verdict.reason.rpartition("failed twice: ")[2]
        anomaly = failure.split(":", 1)[0] if ":" in failure else "sandbox_failed"
        return _outcome("sandbox_error", wall_s, **details, anomaly=anomaly)
    return _outcome("passed" if verdict.reward == 1.0 else "failed", wall_s, **details)
