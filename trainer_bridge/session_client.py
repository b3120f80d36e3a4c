"""Agent sessions from the trainer's side: the RL loop of agentic coding, over the
platform's session API (docs/sessions.md).

    with client.session(version_hash) as s:
        s.observation                      # the statement, the tree, the working directory
        obs = s.execute({"kind": "bash", "command": "pytest -q"})
        group = s.fork(8)                  # GRPO: one set-up, eight episodes
        reward = s.submit()                # a reward, or None with the reason

Steps carry their sequence number, so a step retried after a lost answer is answered
from the platform's record and never runs twice; the lease is renewed in the
background for as long as the session is open.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainer_bridge.client import PlatformClient


@dataclass(frozen=True)
class Observation:
    seq: int
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    files_changed: list[dict[str, Any]]
    obs_hash: str
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, body: dict[str, Any]) -> Observation:
        return cls(seq=body["seq"], stdout=body["stdout"], stderr=body["stderr"], exit_code=body["exit_code"],
                   timed_out=body["timed_out"], files_changed=body.get("files_changed", []),
                   obs_hash=body["obs_hash"], raw=body)  # fmt: skip


@dataclass(frozen=True)
class SessionReward:
    """The verdict: `reward` is None only when the platform failed (`status` sandbox_error)."""

    reward: float | None
    status: str
    reason: str
    outcomes: dict[str, Any]


class AgentSession:
    def __init__(self, client: PlatformClient, body: dict[str, Any]) -> None:
        self.client = client
        self.id: str = body["id"]
        self.body = body
        self.observation: dict[str, Any] = body.get("first_observation") or {}
        self.seq = int(body.get("steps", 0))
        self.submitted: SessionReward | None = None
        self._closed = threading.Event()
        self._renewer: threading.Thread | None = None
        self.renew_every_s: float | None = None

    # -- the loop ---------------------------------------------------------------------------------

    def execute(self, action: dict[str, Any] | str, *, timeout_s: float | None = None) -> Observation:
        """Run one action (a dict, or a shell command as a string) and return what happened."""
        if isinstance(action, str):
            action = {"kind": "bash", "command": action}
        body = {"seq": self.seq + 1, "action": action, **({"timeout_s": timeout_s} if timeout_s else {})}
        wait = (timeout_s or 600.0) + 60.0
        answer = self.client.request("POST", f"sessions/{self.id}/steps", json_body=body, retry_post=True,
                                     timeout_s=wait).json()  # fmt: skip
        self.seq = answer["seq"]
        return Observation.of(answer)

    def fork(self, n: int) -> list[AgentSession]:
        """`n` sessions in this one's state, each its own sandbox. Not retried: a fork
        repeated after a lost answer would make `n` more."""
        answer = self.client.request("POST", f"sessions/{self.id}/fork", json_body={"n": n}, timeout_s=600.0).json()
        children = [AgentSession(self.client, child) for child in answer["sessions"]]
        if self.renew_every_s:
            for child in children:
                child.keep_alive(self.renew_every_s)
        return children

    def submit(self) -> SessionReward:
        """The verdict from a fresh sandbox (the platform answers a repeated submit with the first)."""
        answer = self.client.request("POST", f"sessions/{self.id}/submit", retry_post=True, timeout_s=1800.0).json()
        verdict = answer.get("verdict") or {}
        self.submitted = SessionReward(reward=verdict.get("reward"), status=verdict.get("status", answer["state"]),
                                       reason=verdict.get("reason", answer.get("reason", "")),
                                       outcomes=verdict.get("outcomes", {}))  # fmt: skip
        self._closed.set()
        return self.submitted

    def renew(self) -> datetime:
        answer = self.client.request("POST", f"sessions/{self.id}/renew", retry_post=True).json()
        self.body = answer
        return datetime.fromisoformat(answer["lease_expires_at"])

    def transcript(self) -> dict[str, Any]:
        return self.client.get_json(f"sessions/{self.id}")

    def close(self) -> None:
        self._closed.set()
        if self.submitted is None:
            self.client.request("DELETE", f"sessions/{self.id}")

    # -- lifetime ---------------------------------------------------------------------------------

    def keep_alive(self, every_s: float) -> None:
        """Renew the lease every `every_s` seconds until the session is submitted or closed."""
        self.renew_every_s = every_s

        def loop() -> None:
            while not self._closed.wait(every_s):
                try:
                    self.renew()
                except Exception:  # a missed renewal shows in the next call's answer
                    time.sleep(1.0)

        self._renewer = threading.Thread(target=loop, name=f"renew-{self.id[:8]}", daemon=True)
        self._renewer.start()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_session(client: PlatformClient, version_hash: str, *, limits: dict[str, Any] | None = None,
                 lease_s: float | None = None, renew_every_s: float | None = None) -> AgentSession:  # fmt: skip
    body: dict[str, Any] = {"version_hash": version_hash}
    if limits:
        body["limits"] = limits
    if lease_s:
        body["lease_s"] = lease_s
    answer = client.request("POST", "sessions", json_body=body, headers={"Idempotency-Key": uuid.uuid4().hex},
                            retry_post=True, timeout_s=900.0).json()  # fmt: skip
    session = AgentSession(client, answer)
    lease = lease_s or 600.0
    session.keep_alive(renew_every_s or max(1.0, lease / 3))
    return session
