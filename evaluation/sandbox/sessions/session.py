"""One agent session on the host: its sandbox, its state, its transcript.

States: provisioning -> ready <-> running_step -> submitted -> verifying -> done, and
expired, failed, closed. Each move is claimed under the session's lock from the state
it must leave (`_claim`), so two callers never both run a step, or both submit.

Steps are numbered by the caller (`seq`, from 1). The same `seq` again answers the
stored observation and runs nothing; any other `seq` than the next is refused. Each
observation's `obs_hash` chains it to the one before (a fork's chain continues its
parent's), so an episode can be replayed and audited step by step.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from typing import Any

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import ExportFailed, SessionChannel, SessionSandbox
from evaluation.sandbox.sessions.spares import SparePool
from evaluation.sandbox.sessions.verdict import Verdict, VerdictSpec, judge

PROVISIONING, READY, RUNNING_STEP = "provisioning", "ready", "running_step"
SUBMITTED, VERIFYING, DONE = "submitted", "verifying", "done"
EXPIRED, FAILED, CLOSED = "expired", "failed", "closed"
FINAL_STATES = (DONE, EXPIRED, FAILED, CLOSED)
GENESIS = "0" * 64
# The supervisor's own list (harness/session_supervisor.py), which the host cannot
# import: that module puts the harness on sys.path as it is loaded.
ACTIONS = ("bash", "read_file", "write_file", "edit", "run_tests")


class SessionError(Exception):
    """A request the session refuses; `code` is the API's error code."""

    code = "session_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class ActionInvalid(SessionError):
    code = "invalid_action"


class StateConflict(SessionError):
    code = "session_state"


class SeqConflict(SessionError):
    code = "seq_conflict"


class LimitReached(SessionError):
    code = "limit_reached"


class SessionInfraFailure(SessionError):
    """The platform failed the session (its sandbox died): not the episode's fault."""

    code = "sandbox_error"


def observation_hash(previous: str, observation: dict[str, Any]) -> str:
    body = {key: value for key, value in observation.items() if key not in ("obs_hash", "prev_hash")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{previous}\n{canonical}".encode()).hexdigest()


def validate_action(action: Any) -> dict[str, Any]:
    if not isinstance(action, dict):
        raise ActionInvalid("action: expected an object with a `kind`")
    kind = action.get("kind")
    if kind not in ACTIONS:
        raise ActionInvalid(f"action.kind: {kind!r} is not one of {', '.join(ACTIONS)}")
    required = {"bash": {"command": str}, "read_file": {"path": str}, "write_file": {"path": str, "content": str},
                "edit": {"path": str, "old": str, "new": str}, "run_tests": {}}[kind]  # fmt: skip
    for name, kind_of in required.items():
        if not isinstance(action.get(name), kind_of):
            raise ActionInvalid(f"action.{name}: {kind} needs `{name}`, a string")
    if kind == "run_tests" and not (
        isinstance(action.get("tests", []), list) and all(isinstance(t, str) for t in action.get("tests", []))
    ):
        raise ActionInvalid("action.tests: expected a list of test ids")
    return action


class Session:
    def __init__(self, *, environment: PreparedEnvironment, limits: SessionLimits, verdict_spec: VerdictSpec | None,
                 session_id: str | None = None, parent: Session | None = None,
                 sandbox_class: type[SessionChannel] = SessionSandbox,
                 spares: SparePool | None = None) -> None:  # fmt: skip
        self.id = session_id or uuid.uuid4().hex
        self.environment = environment
        self.limits = limits
        self.verdict_spec = verdict_spec
        self.state = PROVISIONING
        self.state_reason = ""
        self.lock = threading.Lock()
        now = time.time()
        self.created_at = now
        self.last_active_at = now
        self.lease_expires_at = now + limits.lease_s
        self.steps: list[dict[str, Any]] = []
        self.parent_id = parent.id if parent else None
        self.chain_start = parent.last_hash if parent else GENESIS
        self.sandbox_class = sandbox_class
        self.spares = spares
        self.sandbox: SessionChannel | None = None
        self.first_observation: dict[str, Any] = {}
        self.verdict: Verdict | None = None
        self.tree_full = ""  # why the tree is past its size, where only a step's end measures it

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def last_hash(self) -> str:
        return self.steps[-1]["obs_hash"] if self.steps else self.chain_start

    def provision(self, *, statement: str = "", changes: list[dict[str, Any]] | None = None,
                  sibling_of: SessionChannel | None = None) -> dict[str, Any]:  # fmt: skip
        """Give the session a sandbox laid out with `changes`: for a fork, one forked into
        its parent's family (`sibling_of`); else a spare; else one started now."""
        sandbox, init = self._sibling_sandbox(sibling_of, changes)
        if sandbox is None:
            sandbox, init = self._warm_sandbox(changes)
        if sandbox is None:
            sandbox = self.sandbox_class(self.environment, self.limits)
            try:
                init = sandbox.start(changes)
            except SandboxFailure as exc:
                self.state, self.state_reason = FAILED, f"the sandbox did not start: {exc}"
                raise SessionInfraFailure(self.state_reason) from exc
        self.sandbox = sandbox
        self.first_observation = {"statement": statement, "cwd": init["cwd"], "listing": init["listing"]}
        self.state = READY
        return self.first_observation

    @staticmethod
    def _sibling_sandbox(
        sibling_of: SessionChannel | None, changes: list[dict[str, Any]] | None
    ) -> tuple[SessionChannel | None, dict[str, Any]]:
        """A sandbox in the family of `sibling_of`, laid out, or (None, {}) where that
        backend has no families or the family is gone (a spare or a new one serves)."""
        sandbox = sibling_of.sibling() if sibling_of is not None else None
        if sandbox is None:
            return None, {}
        try:
            return sandbox, sandbox.start(changes)
        except SandboxFailure:
            return None, {}

    def _warm_sandbox(self, changes: list[dict[str, Any]] | None) -> tuple[SessionChannel | None, dict[str, Any]]:
        """A spare of this environment, with `changes` laid over it, or (None, {}) when there
        is none (or it failed: a fresh one is started instead)."""
        spare = self.spares.take(self.environment, self.limits) if self.spares is not None else None
        if spare is None:
            return None, {}
        try:
            return spare, spare.apply(changes) if changes else (spare.initialised or {})
        except SandboxFailure:
            spare.close()
            return None, {}

    def _claim(self, expected: tuple[str, ...], new: str) -> None:
        with self.lock:
            if self.state not in expected:
                raise StateConflict(f"the session is {self.state}; this needs it {' or '.join(expected)}",
                                    details={"state": self.state, "reason": self.state_reason})  # fmt: skip
            self.state = new

    def renew(self, now: float | None = None) -> float:
        with self.lock:
            if self.state in FINAL_STATES:
                raise StateConflict(f"the session is {self.state}", details={"state": self.state})
            self.lease_expires_at = (now or time.time()) + self.limits.lease_s
            return self.lease_expires_at

    def close(self, state: str = CLOSED, reason: str = "") -> None:
        """End the session: its sandbox and every process in it are gone when this returns."""
        with self.lock:
            if self.state not in FINAL_STATES:
                self.state, self.state_reason = state, reason
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            sandbox.close()

    # -- steps ---------------------------------------------------------------------------------

    def execute(self, *, seq: Any, action: Any, timeout_s: Any = None) -> dict[str, Any]:
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise SeqConflict("seq: expected an integer from 1")
        with self.lock:
            if seq <= len(self.steps):
                return self.steps[seq - 1]  # the same step again: its stored answer
            if seq != len(self.steps) + 1:
                raise SeqConflict(f"seq: {seq} skips ahead; the next step is {len(self.steps) + 1}",
                                  details={"next_seq": len(self.steps) + 1})  # fmt: skip
        action = validate_action(action)
        timeout = self._step_timeout(timeout_s)
        self._claim((READY,), RUNNING_STEP)
        try:
            if len(self.steps) >= self.limits.max_steps:
                raise LimitReached(f"the episode has used its {self.limits.max_steps} steps; submit it")
            if time.time() - self.created_at > self.limits.episode_wall_s:
                raise LimitReached(f"the episode has run past its {self.limits.episode_wall_s:.0f} s; submit it")
            if self.tree_full:
                raise LimitReached(f"{self.tree_full}; submit it")
            try:
                observation = self.sandbox.step(action, timeout_s=timeout)
            except SandboxFailure as exc:
                self.close(FAILED, f"the sandbox failed during step {seq}: {exc}")
                raise SessionInfraFailure(self.state_reason) from exc
        except BaseException:
            with self.lock:
                if self.state == RUNNING_STEP:
                    self.state = READY
            raise
        observation.pop("op", None)
        if observation.get("tree_full"):
            self.tree_full = observation.get("tree_error") or "the tree is over its size"
        observation = {"seq": seq, "action": action, **observation, "prev_hash": self.last_hash}
        observation["obs_hash"] = observation_hash(self.last_hash, observation)
        with self.lock:
            self.steps.append(observation)
            self.last_active_at = time.time()
            if self.state == RUNNING_STEP:
                self.state = READY
        return observation

    def _step_timeout(self, timeout_s: Any) -> float:
        if timeout_s is None:
            return self.limits.step_timeout_s
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise ActionInvalid("timeout_s: expected a positive number of seconds")
        return min(float(timeout_s), self.limits.step_timeout_s)

    # -- fork and submit ------------------------------------------------------------------------

    def export_changes(self) -> list[dict[str, Any]]:
        """The episode's changes against the base, read while no step runs."""
        self._claim((READY,), RUNNING_STEP)
        try:
            return self.sandbox.export()
        except SandboxFailure as exc:
            self.close(FAILED, f"the sandbox failed while its changes were read: {exc}")
            raise SessionInfraFailure(self.state_reason) from exc
        finally:
            with self.lock:
                if self.state == RUNNING_STEP:
                    self.state = READY

    def submit(self) -> Verdict:
        """Read the changes, kill the sandbox (nothing of the episode runs after this), and
        judge the changes in a fresh one."""
        if self.verdict_spec is None:
            raise StateConflict("this session has no tests to judge it by")
        self._claim((READY,), SUBMITTED)
        try:
            changes = self.sandbox.export()
        except (SandboxFailure, ExportFailed) as exc:
            failed_by_episode = isinstance(exc, ExportFailed)
            self.close(DONE if failed_by_episode else FAILED, str(exc))
            self.verdict = Verdict(reward=0.0 if failed_by_episode else None,
                                   status="failed" if failed_by_episode else "sandbox_error", reason=str(exc),
                                   outcomes={}, applied=[], dropped=[], diff_sha256="")  # fmt: skip
            return self.verdict
        sandbox, self.sandbox = self.sandbox, None
        sandbox.close()
        with self.lock:
            self.state = VERIFYING
        self.verdict = judge(self.environment, changes, self.verdict_spec, self.limits,
                             sandbox_class=self.sandbox_class, spares=self.spares)  # fmt: skip
        with self.lock:
            self.state = DONE
            self.state_reason = self.verdict.reason
        return self.verdict

    def transcript(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "reason": self.state_reason, "parent": self.parent_id,
                "environment": self.environment.digest, "created_at": self.created_at,
                "lease_expires_at": self.lease_expires_at, "limits": self.limits.as_dict(),
                "first_observation": self.first_observation, "chain_start": self.chain_start,
                "steps": self.steps, "verdict": self.verdict.as_dict() if self.verdict else None}  # fmt: skip
