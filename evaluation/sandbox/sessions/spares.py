"""Warm spares: session sandboxes started and laid out ahead of need, per environment.

Starting a session sandbox (a family's bwrap and interpreter, the tree copied into its
tmpfs) is most of what creating a session costs. A host keeps a few sandboxes of each
environment in use started and untouched; a new session takes one (its tree is the
base, as a fresh one's would be), and so does a fork whose parent's family is gone
(it lays the parent's changes over it); a fork otherwise is forked into its parent's
family (family.py), which costs less than a start and nothing in the background. A
taken spare is replaced in the background. Spares are never used twice: one a
session took is that session's, and goes with it.

Spares are made on long-lived threads of their own (a sandbox dies with the thread
that started it: bwrap --die-with-parent), counted apart from sessions, and closed
when their environment has gone unused for `idle_s`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import SessionChannel


class SparePool:
    def __init__(self, sandbox_class: type[SessionChannel], *, per_environment: int = 2, max_total: int = 16,
                 idle_s: float = 600.0) -> None:  # fmt: skip
        self.sandbox_class = sandbox_class
        self.per_environment = per_environment
        self.max_total = max_total
        self.idle_s = idle_s
        self.lock = threading.Lock()
        self.spares: dict[tuple[str, int], deque[SessionChannel]] = {}
        self.pending: dict[tuple[str, int], int] = {}
        self.last_used: dict[tuple[str, int], float] = {}
        self.counters = {"taken": 0, "missed": 0, "started": 0, "failed": 0, "closed": 0}
        self.closed = False
        self._makers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="session-spares")

    @staticmethod
    def _key(environment: PreparedEnvironment, limits: SessionLimits) -> tuple[str, int]:
        # The tmpfs size is fixed when a sandbox starts; every other limit travels with each step.
        return environment.digest, limits.tree_bytes

    def take(self, environment: PreparedEnvironment, limits: SessionLimits) -> SessionChannel | None:
        """A started, untouched sandbox of `environment`, or None (a miss: start one)."""
        if self.per_environment <= 0:
            return None
        key = self._key(environment, limits)
        found = None
        with self.lock:
            self.last_used[key] = time.monotonic()
            queue = self.spares.get(key)
            while queue:
                candidate = queue.popleft()
                if candidate.alive:
                    found = candidate
                    break
                self.counters["closed"] += 1
                candidate.close()
            self.counters["taken" if found else "missed"] += 1
        self._refill(environment, limits)
        if found is not None:
            found.limits = limits
        return found

    def _refill(self, environment: PreparedEnvironment, limits: SessionLimits) -> None:
        key = self._key(environment, limits)
        with self.lock:
            total = sum(len(q) for q in self.spares.values()) + sum(self.pending.values())
            wanted = self.per_environment - len(self.spares.get(key, ())) - self.pending.get(key, 0)
            wanted = min(wanted, self.max_total - total)
            if self.closed or wanted <= 0:
                return
            self.pending[key] = self.pending.get(key, 0) + wanted
        for _ in range(wanted):
            self._makers.submit(self._make, environment, limits, key)

    def _make(self, environment: PreparedEnvironment, limits: SessionLimits, key: tuple[str, int]) -> None:
        with self.lock:
            if self.closed:
                self.pending[key] -= 1
                return
        sandbox = self.sandbox_class(environment, limits)
        try:
            sandbox.start()
        except SandboxFailure:
            with self.lock:
                self.pending[key] -= 1
                self.counters["failed"] += 1
            return
        with self.lock:
            self.pending[key] -= 1
            if self.closed:
                sandbox.close()
                return
            self.spares.setdefault(key, deque()).append(sandbox)
            self.counters["started"] += 1

    def reap(self, now: float | None = None) -> int:
        """Close the spares of environments unused for `idle_s`; returns how many."""
        now = now or time.monotonic()
        doomed: list[Any] = []
        with self.lock:
            for key, used in list(self.last_used.items()):
                if now - used > self.idle_s:
                    doomed += self.spares.pop(key, deque())
                    del self.last_used[key]
            self.counters["closed"] += len(doomed)
        for sandbox in doomed:
            sandbox.close()
        return len(doomed)

    def close(self) -> None:
        """Close every spare; returns once none is being made either, so no sandbox (or
        container) of this pool outlives it."""
        with self.lock:
            self.closed = True
        self._makers.shutdown(wait=True, cancel_futures=True)
        with self.lock:
            doomed = [sandbox for queue in self.spares.values() for sandbox in queue]
            self.spares.clear()
        for sandbox in doomed:
            sandbox.close()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"ready": sum(len(q) for q in self.spares.values()), **self.counters}
