"""Who broke a run: the evidence an attempt leaves, and the rule that weighs it.

A run's verdict may blame the solution only on evidence that the solution caused
the failure. Inside every sandbox the supervisor (the judge) is PID 1 of its PID
namespace, and the kernel delivers no signal a process of that namespace sends to
its init unless the init asked for it: a solution can stop or kill the zygote (it
runs as the same uid), never the supervisor. So:

- the supervisor still answering and saying that the zygote died or was stopped, or
  that the judge was held past the wall-time limit, is evidence against the
  solution: nothing outside the sandbox singles out one process inside it;
- a Docker container the kernel killed for memory (`OOMKilled`) holds nothing but
  the run's own processes under its memory limit: evidence against the solution;
  (a host-wide OOM that picks a container's process is read the same way: the
  kernel does not tell the two apart there, so size sandbox hosts to keep the
  host's OOM killer away);
- the whole sandbox gone (its channel closed: the supervisor died), silent past the
  host's deadline, garbled, or unable to start is evidence of nothing the
  solution could do: an operator, the host's OOM killer, a Docker restart, a host
  too loaded to schedule it. So is the host's OOM killer striking a bwrap sandbox
  (`host_oom`), which may have picked the solution's process, which then looks as
  if it crashed. The sandbox's own memory cgroups say it (memory_cgroups.py): a kill
  in its judge's cgroup, or in its run's cgroup while the run never reached its
  limit (a kill after it did is the run's own memory_exceeded). Where the host has
  no such cgroups, any failure of a bwrap run while /proc/vmstat's `oom_kill` moved
  is read the same way (the functions below).

The rule (engine.run): a clean first attempt is the verdict. Any other first
attempt is rerun once in a fresh sandbox that has seen nothing else, and the rerun
decides: a clean record is the verdict; evidence against the solution is its
failure (a timeout if the judge was held past the limit, memory_exceeded if the
container ran out of memory); anything else is `sandbox_error`, which earns no
reward and is retried by the caller. The first attempt's evidence only says
whether to rerun: a warm sandbox is the one place where another run's leftovers
could matter, so its word alone never blames a solution.
"""

from __future__ import annotations

import time

# Anomalies the supervisor reports while it still answers, naming what the run broke,
# with the verdict the solution earns when a fresh sandbox shows the same.
SOLUTION_EVIDENCE = {
    "zygote_died": "failed",  # killed or stopped by a process of the run: only they can reach it
    "judge_unresponsive": "timeout",  # the judge held past the wall-time limit (the supervisor's alarm)
    "container_oom": "memory_exceeded",  # the container's own memory limit, which only the run fills
}
HOST_OOM = "host_oom"

_VMSTAT = "/proc/vmstat"
_FRESH_FOR_S = 1.0  # an older reading is taken again at an attempt's start
_last: list[float] = [0.0, -1.0]  # monotonic time of the reading, the count


def oom_kills() -> int:
    """How many processes the kernel's OOM killer has killed on this host since boot
    (/proc/vmstat, not namespaced: the whole host). -1 where the kernel does not say."""
    try:
        with open(_VMSTAT, "rb") as handle:
            text = handle.read()
    except OSError:
        return -1
    at = text.find(b"\noom_kill ")
    if at < 0:
        return -1
    end = text.find(b"\n", at + 1)
    return int(text[at + 10 : end if end > 0 else None])


def oom_kills_before() -> int:
    """The count to compare an attempt's end with. A reading up to a second old will do:
    an OOM kill between it and the attempt's start is then put down to the attempt,
    which costs at most a needless rerun, never a wrong verdict. (Reading the file
    costs ~30 us; most attempts are a few milliseconds.)"""
    now = time.monotonic()
    if now - _last[0] > _FRESH_FOR_S:
        _last[0], _last[1] = now, oom_kills()
    return int(_last[1])


def oom_struck_since(before: int) -> bool:
    """Whether the host's OOM killer has killed anything since the count `before`."""
    if before < 0:
        return False
    now = oom_kills()
    _last[0], _last[1] = time.monotonic(), now
    return now > before


def points_at_solution(anomaly: str | None) -> bool:
    return anomaly in SOLUTION_EVIDENCE
