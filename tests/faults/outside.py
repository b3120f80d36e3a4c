"""Faults from outside a sandbox, as an operator, the host's OOM killer or a Docker
restart would cause them: found and dealt from the host, never from a solution.

Only processes below a given ancestor (this test process, or a worker it started)
are touched, so a test never reaches a sandbox of another test run.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    ns_pid: int  # its PID in its innermost PID namespace (1: a sandbox's init, the agent)
    depth: int  # how many PID namespaces deep it is


def _read(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
    except OSError:
        return None
    ns = fields.get("NSpid", "").split()
    try:
        return Proc(pid, int(fields["PPid"]), int(ns[-1]) if ns else pid, len(ns))
    except (KeyError, ValueError):
        return None


def descendants(ancestor: int) -> list[Proc]:
    """Every living process below `ancestor`, read from /proc."""
    procs = [p for p in (_read(int(n)) for n in os.listdir("/proc") if n.isdigit()) if p is not None]
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    found, frontier = [], [ancestor]
    while frontier:
        below = [c for pid in frontier for c in children.get(pid, [])]
        found += below
        frontier = [c.pid for c in below]
    return found


def sandbox_inits(ancestor: int) -> list[Proc]:
    """The init (PID 1) of every sandbox below `ancestor`: the agents. Killing one takes
    its whole sandbox down, which is what an outside fault does."""
    return [p for p in descendants(ancestor) if p.depth > 1 and p.ns_pid == 1]


def kill(pids: list[int], sig: int = signal.SIGKILL) -> int:
    done = 0
    for pid in pids:
        try:
            os.kill(pid, sig)
            done += 1
        except (ProcessLookupError, PermissionError):
            pass
    return done


@dataclass
class Killer:
    """A thread that, until stopped, now and then picks a random target and kills it
    (or kills every target it finds, with `everything`)."""

    targets: Callable[[], list[int]]
    every_s: tuple[float, float] = (0.02, 0.2)
    seed: int = 0
    everything: bool = False
    killed: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        rng = random.Random(self.seed)
        while not self._stop.wait(rng.uniform(*self.every_s)):
            found = self.targets()
            for victim in found if self.everything else [rng.choice(found)] if found else []:
                if kill([victim]):
                    self.killed.append(victim)


@contextmanager
def killing(targets: Callable[[], list[int]], **kw) -> Iterator[Killer]:
    killer = Killer(targets, **kw)
    thread = threading.Thread(target=killer.run, name="outside-killer", daemon=True)
    thread.start()
    try:
        yield killer
    finally:
        killer._stop.set()
        thread.join(timeout=5)


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, every: float = 0.01) -> object:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return None
