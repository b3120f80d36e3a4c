"""The sessions of one host: created within a quota, found by id, forked, reaped.

The quota counts every live session, however it was made (created or forked), so
an agent that leaks sessions runs into it rather than into the host's memory. The
reaper closes sessions whose lease ran out or that sat idle past their timeout; a
worker's crash leaves sandboxes that die with it (`--die-with-parent`), and their
uids are reclaimed by uids.reap_orphaned_uids. The reaper also lets the backend drop
what it keeps for environments the host's cache evicted (a Docker image each), at
most once a minute.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.sessions.backends import sandbox_factory
from evaluation.sandbox.sessions.environments import EnvironmentCache, PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.session import (
    EXPIRED,
    FINAL_STATES,
    READY,
    Session,
    SessionError,
    VerdictSpec,
)
from evaluation.sandbox.sessions.spares import SparePool

log = logging.getLogger(__name__)
MAX_FORK = 64
FORK_THREADS = 8  # a group's forks laid out side by side
PRUNE_EVERY_S = 60.0


class HostFull(SessionError):
    """No room for another session on this host now; `retry_after_s` says when to ask again."""

    code = "host_full"

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message, details={"retry_after_s": retry_after_s})
        self.retry_after_s = retry_after_s


class SessionNotFound(SessionError):
    code = "not_found"


class SessionHost:
    def __init__(self, *, max_sessions: int = 64, backend: str = "bwrap", spares: int = 2,
                 environments: EnvironmentCache | None = None) -> None:  # fmt: skip
        self.max_sessions = max_sessions
        self.environments = environments  # the cache this host's environments come from
        self.backend = backend
        self.sandbox_class = sandbox_factory(backend)
        self.spares = SparePool(self.sandbox_class, per_environment=spares)
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()
        self.counters: Counter[str] = Counter()
        self.last_reaped: list[tuple[str, str, str]] = []  # (id, state, reason) of the last reap's closings
        self.pruned_at: float | None = None  # time.monotonic() of the last prune of environment images

    def live(self) -> int:
        return sum(1 for session in self.sessions.values() if session.state not in FINAL_STATES)

    def _reserve(self, count: int) -> None:
        with self.lock:
            live = self.live() + self.counters["reserved"]
            if live + count > self.max_sessions:
                self.counters["refused_full"] += 1
                raise HostFull(f"this host holds {live} of {self.max_sessions} sessions; close some or retry later",
                               retry_after_s=5.0)  # fmt: skip
            self.counters["reserved"] += count

    def _release(self, count: int) -> None:
        with self.lock:
            self.counters["reserved"] -= count

    def create(self, *, environment: PreparedEnvironment, limits: SessionLimits, verdict_spec: VerdictSpec | None,
               statement: str = "", session_id: str | None = None) -> Session:  # fmt: skip
        self._reserve(1)
        try:
            session = Session(environment=environment, limits=limits, verdict_spec=verdict_spec, session_id=session_id,
                              sandbox_class=self.sandbox_class, spares=self.spares)  # fmt: skip
            session.provision(statement=statement)
            with self.lock:
                self.sessions[session.id] = session
                self.counters["created"] += 1
        finally:
            self._release(1)
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id} on this host")
        return session

    def fork(self, session_id: str, count: int) -> list[Session]:
        """`count` new sessions in the state `session_id` is in now, each in a sandbox of
        its own laid out from the same base and the parent's changes, forked into the
        parent's family where its backend has them (bwrap: family.py)."""
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_FORK:
            raise SessionError(f"n: expected an integer from 1 to {MAX_FORK}")
        parent = self.get(session_id)
        self._reserve(count)
        children: list[Session] = []
        try:
            changes = parent.export_changes()
            children = [self._child_of(parent) for _ in range(count)]
            statement = parent.first_observation.get("statement", "")

            def provision(child: Session) -> None:
                child.provision(statement=statement, changes=changes, sibling_of=parent.sandbox)

            if count == 1:
                provision(children[0])
            else:
                # A group at once: the holder forks them one after another (a millisecond
                # or two each) while each lays its tree out on a core of its own.
                with ThreadPoolExecutor(
                    max_workers=min(count, FORK_THREADS), thread_name_prefix="session-fork"
                ) as pool:
                    for _ in pool.map(provision, children):
                        pass
        except BaseException:
            for child in children:
                child.close()
            raise
        finally:
            self._release(count)
        with self.lock:
            for child in children:
                self.sessions[child.id] = child
            self.counters["forked"] += len(children)
        return children

    def _child_of(self, parent: Session) -> Session:
        return Session(environment=parent.environment, limits=parent.limits, verdict_spec=parent.verdict_spec,
                       parent=parent, sandbox_class=self.sandbox_class, spares=self.spares)  # fmt: skip

    def close(self, session_id: str) -> Session:
        session = self.get(session_id)
        session.close()
        self.counters["closed"] += 1
        return session

    def reap(self, now: float | None = None) -> dict[str, int]:
        """Close every session whose lease ran out or that sat idle too long (a step in
        flight is left to finish); forget finished ones an hour old. Returns the counts."""
        now = now or time.time()
        reaped = {"expired": 0, "idle": 0, "forgotten": 0}
        closed: list[Session] = []
        for session in list(self.sessions.values()):
            if session.state == READY and now > session.lease_expires_at:
                session.close(EXPIRED, "its lease ran out")
                reaped["expired"] += 1
                closed.append(session)
            elif session.state == READY and now - session.last_active_at > session.limits.idle_timeout_s:
                session.close(EXPIRED, f"idle for more than {session.limits.idle_timeout_s:.0f} s")
                reaped["idle"] += 1
                closed.append(session)
            elif session.state in FINAL_STATES and now - session.last_active_at > 3600:
                with self.lock:
                    self.sessions.pop(session.id, None)
                reaped["forgotten"] += 1
        for name, count in reaped.items():
            self.counters[f"reaped_{name}"] += count
        self.last_reaped = [(session.id, session.state, session.state_reason) for session in closed]
        self.counters["spares_closed_idle"] += self.spares.reap()
        self.prune_environments()
        return reaped

    def prune_environments(self) -> list[str]:
        """Let the backend drop what it keeps for environments the cache no longer holds,
        at most once a minute; the digests dropped."""
        now = time.monotonic()
        if self.environments is None or (self.pruned_at is not None and now - self.pruned_at < PRUNE_EVERY_S):
            return []
        self.pruned_at = now
        try:
            pruned = self.sandbox_class.prune_environments(self.environments)
        except Exception as exc:  # the engine down: the next prune tries again
            log.warning("could not prune the images of evicted environments: %s", exc)
            return []
        self.counters["environments_pruned"] += len(pruned)
        return pruned

    def shutdown(self) -> None:
        self.spares.close()
        for session in list(self.sessions.values()):
            session.close()

    def stats(self) -> dict[str, Any]:
        states = Counter(session.state for session in self.sessions.values())
        return {"live": self.live(), "max_sessions": self.max_sessions, "backend": self.backend, "states": dict(states),
                "counters": {k: v for k, v in self.counters.items() if k != "reserved"},
                "spares": self.spares.stats()}  # fmt: skip
