"""Warm sandboxes, leased one run at a time, recycled after N runs, an hour, or any anomaly."""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.errors import PoolBusy, SandboxFailure
from evaluation.sandbox.starts import start_sandbox
from evaluation.sandbox.types import hash_seed_for

DEFAULT_MAX_RUNS = 1000
# A sandbox older than this is retired when it comes back (or is found idle): what
# lets a reaper on another host judge a container older than this plus a run's
# longest wall time to be no one's (docker_backend.reap_containers).
DEFAULT_MAX_AGE_S = 3600.0
HEALTH_CHECK_AFTER_IDLE_S = 30.0
IDLE_PER_SLOT = 4


def max_sandbox_age_s() -> float:
    """SANDBOX_MAX_AGE_S, or an hour: the longest a pooled sandbox serves."""
    return float(os.environ.get("SANDBOX_MAX_AGE_S", "0") or 0) or DEFAULT_MAX_AGE_S


class SandboxPool:
    """A bounded set of started sandboxes of one backend.

    `size` slots (default: the core count) bound how many runs go at once; a
    caller that finds every slot taken waits up to `wait_s` and then gets
    PoolBusy, rather than overloading the machine.

    A sandbox serves one hash seed (PYTHONHASHSEED is fixed at interpreter
    start), so idle sandboxes are kept per hash seed, up to `max_idle` in all
    (default: IDLE_PER_SLOT per slot); past that the longest idle one of
    another hash seed is closed to make room.
    """

    def __init__(
        self,
        factory: Callable[[int, int], Any],
        *,
        size: int | None = None,
        max_runs: int = DEFAULT_MAX_RUNS,
        wait_s: float = 30.0,
        max_idle: int | None = None,
        reaper: Callable[[], int] | None = None,
        reap_every_s: float = 300.0,
        max_age_s: float | None = None,
    ) -> None:
        self.factory = factory
        self.reaper = reaper
        self.reap_every_s = reap_every_s
        self._last_reap = 0.0
        self.reaped = 0
        self.size = size or os.cpu_count() or 1
        self.max_idle = max(1, max_idle or self.size * IDLE_PER_SLOT)
        self.max_runs = max_runs
        self.max_age_s = max_age_s or max_sandbox_age_s()
        self.wait_s = wait_s
        self._idle: list[tuple[Any, float]] = []  # oldest first
        self._leased = 0
        self._slot_numbers = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        # Sandboxes are started on threads that live as long as the pool. A sandbox dies
        # with its parent (bwrap --die-with-parent is PR_SET_PDEATHSIG), and Linux sends
        # that signal when the parent *thread* ends: one started on a caller's short-lived
        # thread (a chunk of work on a thread pool) would die with it, and the next lease
        # would pay a cold start for a sandbox that looked warm.
        self._starter = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="sandbox-start")
        self.started = 0
        self.recycled = 0

    @contextlib.contextmanager
    def lease(self, hash_seed: int | None = None) -> Iterator[Any]:
        """Yield a ready sandbox running under `hash_seed` (default: seed 0's); give
        it back afterwards, or recycle it if the run (or the sandbox) went wrong:
        a sandbox is never reused after an anomaly."""
        sandbox = self._acquire(hash_seed_for(0) if hash_seed is None else int(hash_seed))
        healthy = False
        try:
            yield sandbox
            healthy = sandbox.alive and not getattr(sandbox, "tainted", False)
        finally:
            self._release(sandbox, recycle=not healthy or sandbox.runs >= self.max_runs or self._too_old(sandbox))

    def reap(self) -> int:
        """Clear away what crashed workers left (containers, processes)."""
        self._last_reap = time.monotonic()
        if self.reaper is None:
            return 0
        try:
            count = self.reaper()
        except Exception:  # a failed sweep must not fail the run that triggered it
            return 0
        self.reaped += count
        return count

    def _too_old(self, sandbox: Any) -> bool:
        return time.monotonic() - getattr(sandbox, "pool_started_at", time.monotonic()) > self.max_age_s

    def _take_idle(self, hash_seed: int) -> Any | None:
        """The longest-idle sandbox of `hash_seed` that still answers. Not the one
        just returned: a sandbox ends its run after the result is out (kills what the
        run started, wipes the scratch, forks the next spare), and a run sent to it
        meanwhile waits for that; the longest idle has had the most time to finish."""
        for index in range(len(self._idle)):
            sandbox, idle_since = self._idle[index]
            if sandbox.hash_seed != hash_seed:
                continue
            del self._idle[index]
            stale = time.monotonic() - idle_since > HEALTH_CHECK_AFTER_IDLE_S
            if sandbox.alive and not self._too_old(sandbox) and not (stale and not sandbox.ping()):
                return sandbox
            self._retire(sandbox)
            return self._take_idle(hash_seed)
        return None

    def _acquire(self, hash_seed: int) -> Any:
        if self.reaper is not None and time.monotonic() - self._last_reap > self.reap_every_s:
            self.reap()  # at the first lease, then periodically
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxFailure("the pool is closed", anomaly="pool_closed")
                if self._leased < self.size:
                    sandbox = self._take_idle(hash_seed)
                    self._leased += 1
                    if sandbox is not None:
                        return sandbox
                    if len(self._idle) >= self.max_idle:
                        self._retire(self._idle.pop(0)[0])  # the longest idle makes room
                    slot = next(self._slot_numbers)
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise PoolBusy(f"all {self.size} sandboxes are busy; try again shortly")
                self._cond.wait(remaining)
        try:
            sandbox = self._starter.submit(self._start, slot, hash_seed).result()
        except BaseException:
            with self._cond:
                self._leased -= 1
                self._cond.notify()
            raise
        self.started += 1
        return sandbox

    def _start(self, slot: int, hash_seed: int) -> Any:
        """A started sandbox; a failed start is counted and retried (starts.py), so a
        lease meets a start failure only once the host has refused it several times."""
        backend: list[str] = []

        def attempt() -> Any:
            sandbox = self.factory(slot, hash_seed)
            backend[:] = [str(getattr(sandbox, "backend", "") or "unknown")]
            sandbox.start()
            return sandbox

        sandbox = start_sandbox(attempt, backend=lambda: backend[0] if backend else "unknown", kind="warm")
        sandbox.pool_started_at = time.monotonic()
        return sandbox

    def _release(self, sandbox: Any, *, recycle: bool) -> None:
        with self._cond:
            self._leased -= 1
            if recycle or self._closed:
                self._retire(sandbox)
            else:
                self._idle.append((sandbox, time.monotonic()))
                while len(self._idle) > self.max_idle:
                    self._retire(self._idle.pop(0)[0])
            self._cond.notify()

    def _retire(self, sandbox: Any) -> None:
        self.recycled += 1
        threading.Thread(target=sandbox.close, daemon=True).start()

    def warm(self, count: int | None = None, *, hash_seeds: tuple[int, ...] | None = None) -> None:
        """Start sandboxes ahead of demand, so the first runs pay no start-up:
        `count` (default: one per slot) for each of `hash_seeds` (default: seed 0's)."""
        for hash_seed in hash_seeds or (hash_seed_for(0),):
            started = []
            for _ in range(min(count or self.size, self.size)):
                started.append(self._acquire(hash_seed))
            for sandbox in started:
                self._release(sandbox, recycle=False)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
        for sandbox, _ in idle:
            sandbox.close()
        self._starter.shutdown(wait=False)

    def stats(self) -> dict[str, int]:
        with self._cond:
            return {"size": self.size, "idle": len(self._idle), "leased": self._leased, "max_idle": self.max_idle,
                    "started": self.started, "recycled": self.recycled, "reaped": self.reaped}  # fmt: skip
