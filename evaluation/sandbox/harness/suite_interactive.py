"""Interactive runs: a solution and the task's interactor talking through pipes, each
in a sandbox of its own (evaluation/sandbox/interactors.py starts the pair).

The two sandboxes are fresh ones the host forked with a shared socket between their
supervisors (fd 3, the *peer*); nothing else joins them. Per case, in the order the
run's seed gives:

1. the interactor's side (kind `interactor`) writes the case's input and answer
   files, makes two pipes, sends the solution's ends to the other side over the peer
   (`{"op": "case", "name": ...}` with the descriptors), and starts the interactor
   as `interactor INPUT OUTPUT ANSWER` on its own ends (OUTPUT: a file it may write);
2. the solution's side (kind `interactive`) starts the solution with those ends as
   its stdin and stdout, waits for it under the solution's limits (its wall time is
   a budget over all cases), and answers `{"op": "ended", ...}` with how it ended;
3. the interactor's exit code is its verdict under testlib's contract (as a
   checker's: suite_checker.py), and the next case starts once both have ended.

A solution that ran out of a limit ends the run (`fatal` in its answer) and no more
cases start; the side that is told `{"op": "done"}` ends too. Neither side's tests
ever enter the other's run: the solution's side holds only the cases' names, and
the interactor, its input and its answers stay in the other sandbox, whose processes
the solution cannot see, signal or read (another PID namespace and another uid).

A deadlock (each waiting for the other) ends when the solution's wall time runs out:
`timeout`, the solution's, as an idle solution is in every judge. The interactor
gets the solution's time plus its own per case; past that it has failed. Each verdict
says whether the solution stopped talking before the interactor did
(`after_solution`: which pipe hung up first, see _Ends): interactors.py blames on it.
"""

from __future__ import annotations

import os
import select
import time

from . import lite, program, scratch
from .outcomes import OUTCOME_FAILED, OUTCOME_PASSED, OUTCOME_UNCHECKED, CandidateFailure
from .resources import MEMORY_EXIT
from .suite_checker import judged, verdict_of

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge

PEER_FD = 3  # as harness/fresh.py places it
# How long one side waits for the other beyond its own limits before calling the
# pair broken (a harness fault: nothing is decided against either program).
PEER_SLACK_S = 10.0


class PeerLost(Exception):
    """The other side of the run went away or fell silent: the pair's fault, not a program's."""


def run(judge: Judge) -> None:
    peer = _peer()
    try:
        if judge.run_spec["kind"] == "interactive":
            _serve_solution(judge, peer)
        else:
            _interact(judge, peer)
    finally:
        peer.close()


def _peer() -> lite.Socket:
    import stat

    try:
        if not stat.S_ISSOCK(os.fstat(PEER_FD).st_mode):
            raise OSError("fd 3 is not a socket")
    except OSError as exc:
        # A sandbox that was not started as one of a pair (a pooled one): the host's fault.
        raise RuntimeError(f"an interactive run needs a sandbox started with a peer: {exc}") from exc
    return lite.Socket(fileno=os.dup(PEER_FD))


def _send(peer: lite.Socket, message: dict[str, Any], fds: list[int] = ()) -> None:
    try:
        lite.send_fds(peer, [lite.dumps(message).encode()], list(fds))
    except OSError as exc:
        raise PeerLost(f"the other side of the interactive run is gone: {exc}") from exc


def _receive(peer: lite.Socket, timeout: float) -> tuple[dict[str, Any], list[int]]:
    if not select.select([peer], [], [], max(0.0, timeout))[0]:
        raise PeerLost(f"the other side of the interactive run said nothing for {timeout:.3g} s")
    try:
        data, fds, _flags, _addr = lite.recv_fds(peer, 65536, 4)
    except OSError as exc:
        raise PeerLost(f"the other side of the interactive run is gone: {exc}") from exc
    if not data:
        raise PeerLost("the other side of the interactive run closed its end")
    return lite.loads(data), fds


# -- the solution's side ---------------------------------------------------------------------


def _serve_solution(judge: Judge, peer: lite.Socket) -> None:
    """Start the solution on each case's pipes as the other side sends them."""
    budget = float(judge.tests.get("solution_wall_s") or judge.limits["wall_s"])
    names = set(judge.tests.get("cases") or ())
    while True:
        message, fds = _receive(peer, judge.remaining())
        if message.get("op") == "done":
            for fd in fds:
                os.close(fd)
            return
        name = str(message.get("name"))
        if message.get("op") != "case" or len(fds) != 2 or name not in names:
            for fd in fds:
                os.close(fd)
            raise PeerLost(f"the interactor's side sent {message!r} with {len(fds)} descriptor(s)")
        names.discard(name)
        started = time.monotonic()
        child = program.spawn(judge, stdin=True, wired=(fds[0], fds[1]))
        outcome, said, fatal = _await_solution(judge, child, max(0.0, min(budget, judge.remaining())))
        budget -= time.monotonic() - started
        judge.record(name, outcome, said, started)
        _send(peer, {"op": "ended", "name": name, "outcome": outcome, "message": said, "fatal": fatal})
        if fatal:
            raise CandidateFailure(fatal, said)


def _await_solution(judge: Judge, child: Child, wait_s: float) -> tuple[str, str, str]:
    """(outcome, message, fatal kind or "") of the solution's process for one case."""
    status = judge.reap(child, timeout=wait_s)
    if child.exit is None:
        judge.kill(child)
        judge.reap(child)
        return OUTCOME_FAILED, "timed out", "timeout"
    child.err.join(1.0)
    if child.err.exceeded:
        return OUTCOME_FAILED, "output limit exceeded", "output"
    if status.get("cpu_exceeded"):
        return OUTCOME_FAILED, "CPU time exceeded", "timeout"
    if status.get("code") == MEMORY_EXIT or program.ran_out_of_memory(judge, child, status):
        return OUTCOME_FAILED, "memory exceeded", "memory"
    if status.get("signal") or status.get("code"):
        how = f"signal {status['signal']}" if status.get("signal") else f"exit code {status.get('code')}"
        return OUTCOME_FAILED, f"the program ended with {how}", ""
    return OUTCOME_UNCHECKED, "for the task's interactor to judge", ""


# -- the interactor's side -------------------------------------------------------------------


def _interact(judge: Judge, peer: lite.Socket) -> None:
    """Run the interactor against the solution on each case; its exit is the verdict."""
    case_s = float(judge.tests.get("case_wall_s") or 10.0)
    solution_s = float(judge.tests.get("solution_wall_s") or judge.limits["wall_s"])
    directory = os.path.join(scratch.RUN_DIR, "cases")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    verdicts: dict[str, dict[str, Any]] = {}
    solutions: dict[str, dict[str, Any]] = {}
    for index, (name, case) in enumerate(judge.named_tests()):
        started = time.monotonic()
        paths = _case_files(directory, index, case)
        to_solution_r, to_solution_w = os.pipe()
        from_solution_r, from_solution_w = os.pipe()
        # Read ends of both pipes, never read: each hangs up when its writers are gone,
        # so the kernel says which side closed its output first (see _Ends).
        ends = _Ends(interactor=os.dup(to_solution_r), solution=os.dup(from_solution_r))
        try:
            _send(peer, {"op": "case", "name": name}, [to_solution_r, from_solution_w])
            os.close(to_solution_r)
            os.close(from_solution_w)
            child = program.spawn(judge, stdin=True, args=paths, wired=(from_solution_r, to_solution_w))
            verdicts[name], solutions[name] = _await_pair(judge, peer, child, ends, solution_s + case_s, case_s)
        finally:
            ends.close()
        solution_s -= time.monotonic() - started
        outcome = OUTCOME_PASSED if verdicts[name]["verdict"] != "fail" else OUTCOME_FAILED
        judge.record(name, outcome, verdicts[name]["message"], started)
        if solutions[name].get("fatal"):
            break  # the solution ran out of a limit: its run is over
    else:
        _send(peer, {"op": "done"})
    judge.data = {"verdicts": verdicts}


class _Ends:
    """When each side of a case stopped talking, as the kernel orders it: the moment
    the interactor's output (the solution's input) hung up, or its exit, whichever came
    first; and the moment the solution's output hung up, or its side reported its end.
    An interactor that fails because the solution left fails after the solution's end;
    one that fails on its own hangs up first (the solution then reads the end of its
    input). While the interactor's output is watched, its writes to a solution that has
    gone still succeed (into the pipe): it reads the end of the solution's output next,
    and judges that, instead of dying of SIGPIPE. Both are closed once the interactor
    has exited, so a solution still writing gets EPIPE as it would without them."""

    def __init__(self, *, interactor: int, solution: int) -> None:
        self.fds = {"interactor": interactor, "solution": solution}
        self.at: dict[str, float] = {}

    def watch(self, poller: Any) -> None:
        for fd in self.fds.values():
            poller.register(fd, 0)  # hang-ups (POLLHUP) are reported whatever the mask

    def saw(self, fd: int, now: float, poller: Any) -> None:
        for side, watched in list(self.fds.items()):
            if watched == fd:
                self.at.setdefault(side, now)
                poller.unregister(fd)
                os.close(fd)
                del self.fds[side]

    def ended(self, side: str, now: float) -> None:
        self.at.setdefault(side, now)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def solution_first(self) -> bool:
        return self.at.get("solution", float("inf")) < self.at.get("interactor", float("inf"))


def _await_pair(judge: Judge, peer: lite.Socket, child: Child, ends: _Ends, interactor_s: float,
                case_s: float) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Wait for both the interactor and the solution's side's report of the case."""
    now = time.monotonic()
    interactor_deadline = now + interactor_s
    peer_deadline = now + interactor_s + PEER_SLACK_S
    ended: dict[str, Any] | None = None
    overran = False
    poller = select.poll()
    for watched in (judge.ctl, peer):
        poller.register(watched, select.POLLIN)
    ends.watch(poller)
    while child.exit is None or ended is None:
        now = time.monotonic()
        if child.exit is None and now >= interactor_deadline:
            ends.ended("interactor", now)
            judge.kill(child)
            judge.reap(child)
            overran = True
        if child.exit is not None:
            ends.ended("interactor", child.exited_at or now)
            ends.close()  # a solution still writing now gets EPIPE
            continue_waiting = ended is None
            if not continue_waiting:
                break
        if ended is None and now >= peer_deadline:
            raise PeerLost("the solution's side did not report the end of a case")
        wake = min(interactor_deadline, peer_deadline) if child.exit is None else peer_deadline
        for fd, _event in poller.poll(max(0.0, wake - now) * 1000.0):
            seen = time.monotonic()
            if fd == judge.ctl.fileno():
                judge.reap(child, timeout=0.0)
            elif fd == peer.fileno() and ended is None:
                message, fds = _receive(peer, 0.0)
                for received in fds:
                    os.close(received)
                if message.get("op") != "ended":
                    raise PeerLost(f"the solution's side sent {message!r}")
                ended = message
                ends.ended("solution", seen)
                # Once its side has reported, its end may close (its run is over): not watched.
                poller.unregister(peer)
                # The solution is done: the interactor has its own per-case time left, no more.
                interactor_deadline = min(interactor_deadline, seen + case_s)
            elif fd != peer.fileno():
                ends.saw(fd, seen, poller)
    child.err.join(1.0)
    if overran:
        verdict = judged("fail", f"the interactor ran past its wall time ({case_s:g} s after the solution)", None)
    else:
        verdict = verdict_of(judge, child, child.exit or {}, who="interactor")
    # Whose end came first decides whose fault a failing interactor is (interactors.fold).
    verdict["after_solution"] = ends.solution_first()
    return verdict, ended


def _case_files(directory: str, index: int, case: dict[str, Any]) -> list[str]:
    paths = []
    for part, text in (("input", case.get("input")), ("output", ""), ("answer", case.get("output"))):
        path = os.path.join(directory, f"{index}.{part}")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(str(text or ""))
        if part != "output":  # OUTPUT is the interactor's to write (testlib's `tout`)
            os.chmod(path, 0o444)
        paths.append(path)
    return paths
