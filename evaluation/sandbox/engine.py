"""`run(request) -> result`: one execution in a sandbox, whatever the backend.

The engine decides who is to blame when something goes wrong, on evidence
(evaluation/sandbox/evidence.py says what counts and why). A sandbox that cannot
start is `sandbox_error`: our fault, never a wrong answer. A run whose first
attempt leaves no clean record is rerun once in a fresh sandbox, and the rerun
decides: a clean record is the verdict; evidence that the solution broke its
sandbox (its zygote killed or stopped, its judge held past the wall time, its
container out of memory) is the solution's failure; anything else (the sandbox
killed from outside, silent, unable to start, the host's OOM killer striking)
is `sandbox_error`, with no reward, for the caller to retry.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from evaluation.sandbox import counters, evidence, function_calls, interactors, programs, replay, special_judges
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import lite
from evaluation.sandbox.harness_files import harness_version
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import RunRequest, RunResult, Status, TestOutcome

TRUNCATION_MARKER = "\n…[output truncated: the limit is {limit} bytes]"
_pools: dict[str, SandboxPool] = {}
_pools_lock = threading.Lock()


def default_backend() -> str:
    return os.environ.get("SANDBOX_BACKEND", "bwrap")


def sandbox_reaper(backend: str) -> Any:
    if backend == "bwrap":
        from evaluation.sandbox.uids import reap_orphaned_uids

        return reap_orphaned_uids
    from evaluation.sandbox.docker_backend import reap_containers

    return reap_containers


def sandbox_factory(backend: str, *, warm: bool = True) -> Any:
    if backend == "bwrap":
        from evaluation.sandbox.bwrap import BwrapSandbox

        return lambda slot, hash_seed: BwrapSandbox(slot=slot, hash_seed=hash_seed, warm=warm)
    if backend == "docker":
        from evaluation.sandbox.docker_backend import DockerSandbox

        return lambda slot, hash_seed: DockerSandbox(slot=slot, hash_seed=hash_seed)
    raise ValueError(f"unknown sandbox backend {backend!r}: use bwrap or docker")


def get_pool(backend: str | None = None) -> SandboxPool:
    """The process-wide warm pool of a backend, created on first use."""
    backend = backend or default_backend()
    with _pools_lock:
        if backend not in _pools:
            size = int(os.environ.get("SANDBOX_POOL_SIZE", "0")) or None
            max_idle = int(os.environ.get("SANDBOX_POOL_MAX_IDLE", "0")) or None
            _pools[backend] = SandboxPool(
                sandbox_factory(backend), size=size, max_idle=max_idle, reaper=sandbox_reaper(backend)
            )
        return _pools[backend]


def close_pools() -> None:
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
    from evaluation.sandbox.templates import shelf

    shelf.close()


class _Attempt:
    def __init__(self) -> None:
        self.raw: dict[str, Any] | None = None
        self.anomaly: str | None = None
        self.detail = ""
        self.sandbox: Any = None


def cold_start() -> str:
    """How a cold sandbox is made: `fork` from a template (bwrap only), or `exec`."""
    how = os.environ.get("SANDBOX_COLD", "fork")
    if how not in ("fork", "exec"):
        raise ValueError(f"SANDBOX_COLD={how!r}: use fork (from a template, the default) or exec")
    return how


def cold_sandbox(backend: str, hash_seed: int, how: str | None = None) -> Any:
    """A started sandbox that has seen nothing else. Forked from a template when it can
    be (evaluation/sandbox/templates.py); started by exec when templates cannot work here,
    or when a fork failed. Every failed start is counted, and one by exec is retried a
    bounded number of times (evaluation/sandbox/starts.py): a run meets a start failure
    only once the host refused it each time, and then as start_failed, never its own."""
    from evaluation.sandbox.starts import count_failure, start_sandbox

    if backend == "bwrap" and (how or cold_start()) == "fork":
        from evaluation.sandbox.templates import fresh_sandbox, shelf

        if not shelf.unsupported:  # known: every cold start here is by exec, no failure to count
            try:
                return fresh_sandbox(hash_seed)
            except (SandboxFailure, OSError) as exc:  # OSError: a pipe or a fork the host refused
                missing = getattr(exc, "anomaly", "") == "backend_missing"
                count_failure(exc, backend=backend, kind="fresh", attempt=1, retry=not missing)
                if missing:
                    raise
                counters.log.warning("no sandbox from a template (%s): starting one by exec", exc)
    kind = "exec" if backend == "bwrap" else "cold"
    return start_sandbox(lambda: sandbox_factory(backend, warm=False)(0, hash_seed).start(), backend=backend,
                         kind=kind)  # fmt: skip


def _attempt(request: RunRequest, pool: SandboxPool | None, backend: str, cold: str | None = None,
             make: Callable[[], Any] | None = None) -> _Attempt:  # fmt: skip
    """One attempt at `request`: in a sandbox leased from `pool`, or else in a cold one
    (`make` starts it: one of an interactive pair, say; by default cold_sandbox)."""
    attempt = _Attempt()
    run_id = uuid.uuid4().hex
    oom_before = evidence.oom_kills_before() if backend == "bwrap" else -1
    cold_one = None
    if pool is None:  # cold: a fresh sandbox for this run alone
        try:
            cold_one = attempt.sandbox = make() if make else cold_sandbox(backend, request.hash_seed, cold)
            attempt.raw = cold_one.execute(request, run_id)
        except SandboxFailure as exc:
            attempt.anomaly, attempt.detail = exc.anomaly, str(exc)
            _ask_the_remains(attempt, cold_one)
        except BaseException:
            if cold_one is not None:
                cold_one.close()
            raise
    else:
        try:
            with pool.lease(request.hash_seed) as sandbox:
                attempt.sandbox = sandbox
                try:
                    attempt.raw = sandbox.execute(request, run_id)
                except SandboxFailure as exc:
                    attempt.anomaly, attempt.detail = exc.anomaly, str(exc)
                    sandbox.tainted = True
                    _ask_the_remains(attempt, sandbox)
                    raise
                if attempt.raw.get("anomaly"):
                    sandbox.tainted = True
        except SandboxFailure as exc:
            if attempt.anomaly is None:
                attempt.anomaly, attempt.detail = exc.anomaly, str(exc)
    record = (attempt.raw or {}).get("record") or {}
    if attempt.raw is not None and attempt.anomaly is None:
        attempt.anomaly = attempt.raw.get("anomaly")
        attempt.detail = str(attempt.raw.get("detail") or "")[:2000]
        if attempt.anomaly is None and record.get("status") == Status.SANDBOX_ERROR:
            attempt.anomaly, attempt.detail = "harness_error", record.get("message", "")
        if attempt.anomaly is None and not record.get("complete"):
            attempt.anomaly = "incomplete_record"
    failed = attempt.anomaly is not None or record.get("status") != Status.PASSED
    counted = getattr(attempt.sandbox, "memory_cgroup", None) is not None  # its own counters spoke (base.execute)
    if failed and backend == "bwrap" and not counted and evidence.oom_struck_since(oom_before):
        # The host's OOM killer struck while this ran: it may have picked this run's
        # process, and a solution killed that way looks as if it crashed. (A container's
        # own memory limit is the solution's to keep, and so is a bwrap sandbox's memory
        # cgroup, whose counters tell its kills from the host's: see evidence.py.)
        attempt.detail = f"the host's OOM killer struck during the run ({attempt.anomaly or 'no anomaly'})"
        attempt.anomaly = evidence.HOST_OOM
    if cold_one is not None:
        if attempt.anomaly is None:  # the verdict is in; tearing the sandbox down need not delay it
            threading.Thread(target=cold_one.close, daemon=True).start()
        else:  # a rerun follows: this one's template goes back to the shelf for it first
            cold_one.close()
    return attempt


def _ask_the_remains(attempt: _Attempt, sandbox: Any) -> None:
    """A sandbox that stopped answering: ask its backend what it saw (a container the
    kernel killed for memory, a process killed by a signal) for the evidence."""
    seen = getattr(sandbox, "death_evidence", None)
    if seen is None or attempt.anomaly not in ("sandbox_died", "host_deadline"):
        return
    try:
        anomaly, detail = seen()
    except Exception as exc:  # the evidence is a nicety; the run's blame stands without it
        counters.log.warning("could not ask a lost sandbox what happened: %s", exc)
        return
    attempt.anomaly = anomaly or attempt.anomaly
    if detail:
        attempt.detail = f"{attempt.detail} ({detail})"


def run(
    request: RunRequest,
    *,
    backend: str | None = None,
    pool: SandboxPool | None = None,
    warm: bool = True,
    cold: str | None = None,
) -> RunResult:
    """Execute `request` and return its result; see the module docstring for blame.
    `cold` overrides SANDBOX_COLD (how cold sandboxes are made: fork or exec)."""
    backend = backend or default_backend()
    if warm and pool is None:
        pool = get_pool(backend)
    calls = request if function_calls.is_function_calls(request) else None
    if calls is not None:
        # A call of the solution's function per test: the solution and its driver, run as a program.
        request = function_calls.as_program_run(request)
    if interactors.judged_by_interactor(request):
        # Two programs talking through pipes, each in a fresh sandbox of its own.
        result = interactors.run_with_interactor(
            request, lambda part: run(part, backend=backend, pool=pool, warm=warm, cold=cold), backend, run_pair
        )
        result.request_digest = _keep_for_replay(request)
        return result
    if special_judges.judged_by_checker(request):
        # Two runs in two sandboxes: the solution's, then the task's checker on its outputs.
        result = special_judges.run_with_checker(
            request, lambda part: run(part, backend=backend, pool=pool, warm=warm, cold=cold)
        )
        result.request_digest = _keep_for_replay(request)
        return result
    if request.program is None and (request.language != "python" or request.suite_kind in programs.PROGRAM_KINDS):
        # Another language: build it (once per source and toolchain: the compile cache) and
        # run what was built. A compile error is the solution's result, decided here.
        ready = programs.prepared(
            request, lambda built: run(built, backend=backend, pool=pool, warm=warm, cold=cold), backend
        )
        if isinstance(ready, RunResult):
            ready.backend = ready.backend or backend
            if calls is not None and ready.status == Status.COMPILE_ERROR:
                ready.message = f"{function_calls.compile_note(calls)}\n{ready.message}"
            return ready
        request = ready
    started = time.monotonic()
    first = _attempt(request, pool, backend, cold)  # PoolBusy goes to the caller: nothing ran
    anomalies = [first.anomaly]
    final = first
    if first.anomaly is not None:
        # Rerun once, cold, in a sandbox that has seen nothing else: its evidence decides.
        final = _attempt(request, None, backend, cold)
        anomalies.append(final.anomaly)
    if final.anomaly is None:
        result = _from_record(request, final, backend)
        result.anomaly = first.anomaly
    else:
        result = _blame(request, first, final, backend)
        result.wall_s = time.monotonic() - started
    result.attempts = len(anomalies)
    _log(result, request, anomalies)
    return result


def run_pair(first: RunRequest, second: RunRequest, backend: str) -> tuple[RunResult, RunResult]:
    """Run two requests at once in two fresh sandboxes joined by a socket between their
    supervisors (an interactive run's two sides: harness/suite_interactive.py). On bwrap
    each sandbox is forked from a template of its own; on Docker each is a container of
    its own, handed its end as it starts (docker_handover.py). Either way each side has its
    own uid and PID namespace. A pair in which either side left no clean record is rerun
    once, whole, in two new sandboxes; each side's result is then decided as a single
    run's is."""
    started = time.monotonic()
    attempts: list[tuple[_Attempt, _Attempt]] = []
    for _ in range(2):
        ours, theirs = lite.socketpair(lite.SOCK_SEQPACKET)
        sides: list[_Attempt | None] = [None, None]

        def side(index: int, request: RunRequest, end: lite.Socket, sides: list[_Attempt | None] = sides) -> None:
            def make() -> Any:
                try:
                    return _peered_sandbox(backend, request.hash_seed, end.fileno())
                finally:
                    end.close()  # the sandbox holds its own copy: the other side sees EOF when it goes

            sides[index] = _attempt(request, None, backend, make=make)

        helper = threading.Thread(target=side, args=(1, second, theirs), daemon=True)
        helper.start()
        try:
            side(0, first, ours)
        finally:
            helper.join()
        attempts.append((sides[0], sides[1]))  # type: ignore[arg-type]
        if sides[0].anomaly is None and sides[1].anomaly is None:  # type: ignore[union-attr]
            break
    results = []
    for index, request in enumerate((first, second)):
        initial, final = attempts[0][index], attempts[-1][index]
        if final.anomaly is None:
            result = _from_record(request, final, backend)
            result.anomaly = initial.anomaly if len(attempts) > 1 else None
        else:
            result = _blame(request, initial, final, backend)
            result.wall_s = time.monotonic() - started
        result.attempts = len(attempts)
        _log(result, request, [pair[index].anomaly for pair in attempts])
        results.append(result)
    return results[0], results[1]


def _peered_sandbox(backend: str, hash_seed: int, peer_fd: int) -> Any:
    """A started one-run sandbox with `peer_fd` as its peer (one side of run_pair's)."""
    if backend == "bwrap":
        from evaluation.sandbox.templates import fresh_sandbox

        return fresh_sandbox(hash_seed, peer_fd)
    if backend == "docker":
        from evaluation.sandbox.docker_backend import DockerSandbox
        from evaluation.sandbox.starts import start_sandbox

        return start_sandbox(lambda: DockerSandbox(hash_seed=hash_seed, peer_fd=peer_fd).start(), backend=backend,
                             kind="cold")  # fmt: skip
    raise ValueError(f"unknown sandbox backend {backend!r}: use bwrap or docker")


def _blame(request: RunRequest, first: _Attempt, rerun: _Attempt, backend: str) -> RunResult:
    """Both attempts left no clean record: the fresh sandbox's evidence decides."""
    earned = evidence.SOLUTION_EVIDENCE.get(rerun.anomaly or "")
    if earned is None:
        status = Status.SANDBOX_ERROR
        message = (
            f"the sandbox failed, not the solution: {rerun.anomaly}: {rerun.detail}".strip()
            + f" (first attempt: {first.anomaly})"
        )
    else:
        status = Status(earned)
        what = {
            "zygote_died": "killed or stopped the process that starts its own (the zygote)",
            "judge_unresponsive": "held its judge past the wall-time limit",
            "container_oom": "filled its container's memory until the kernel killed the judge",
        }[rerun.anomaly]
        message = (
            f"the solution {what} in a fresh sandbox (first attempt: {first.anomaly}); "
            "a run that leaves no complete result record has failed"
        )
    sandbox = rerun.sandbox or first.sandbox
    return RunResult(
        status=status,
        message=message,
        backend=backend,
        sandbox_id=getattr(sandbox, "id", ""),
        runtime_fingerprint=sandbox.fingerprint() if sandbox and getattr(sandbox, "ready", None) else "",
        harness_version=harness_version(),
        seed=request.seed,
        repeat=request.repeat,
        anomaly=rerun.anomaly,
    )


def _from_record(request: RunRequest, attempt: _Attempt, backend: str) -> RunResult:
    raw = attempt.raw or {}
    record = raw.get("record") or {}
    limit = request.limits.output_bytes
    stdout, stderr = record.get("stdout", ""), record.get("stderr", "")
    if record.get("output_truncated"):
        marker = TRUNCATION_MARKER.format(limit=limit)
        stdout, stderr = stdout + marker, stderr + marker
    solution_exit = raw.get("solution_exit") or {}
    sandbox = attempt.sandbox
    return RunResult(
        status=Status(record.get("status", Status.SANDBOX_ERROR)),
        tests=[TestOutcome(**t) for t in record.get("tests", [])],
        message=record.get("message", ""),
        exit_code=solution_exit.get("code"),
        signal=solution_exit.get("signal"),
        stdout=stdout,
        stderr=stderr,
        wall_s=float(raw.get("wall_s", 0.0)),
        cpu_s=float(raw.get("cpu_s", 0.0)),
        peak_memory_kb=int(raw.get("peak_memory_kb", 0)),
        backend=backend,
        sandbox_id=sandbox.id if sandbox else "",
        runtime_fingerprint=sandbox.fingerprint() if sandbox else "",
        image_digest=getattr(sandbox, "image_id", "") if sandbox else "",
        harness_version=harness_version(),
        hash_seed=str((sandbox.ready or {}).get("hash_seed", "")) if sandbox else str(request.hash_seed),
        seed=request.seed,
        repeat=request.repeat,
        setup_error=str(record.get("setup_error") or ""),
        data=record.get("data") if isinstance(record.get("data"), dict) else None,
    )


def _log(result: RunResult, request: RunRequest, anomalies: list[str | None]) -> None:
    result.request_digest = _keep_for_replay(request)
    counters.record_execution(
        {
            "event": "execution",
            "backend": result.backend,
            "status": str(result.status),
            "suite_kind": request.suite_kind,
            "tests": len(result.tests),
            "failed_tests": sum(1 for t in result.tests if t.outcome != "passed"),
            "wall_s": round(result.wall_s, 6),
            "cpu_s": round(result.cpu_s, 6),
            "peak_memory_kb": result.peak_memory_kb,
            "sandbox_id": result.sandbox_id,
            "runtime_fingerprint": result.runtime_fingerprint,
            "image_digest": result.image_digest,
            "harness_version": result.harness_version,
            "seed": result.seed,
            "repeat": result.repeat,
            "attempts": result.attempts,
            "anomaly": result.anomaly,
            "anomalies": anomalies,
            "request_digest": result.request_digest,
        }
    )


def request_digest(request: RunRequest) -> str:
    """SHA-256 of everything that determines a run's outcome: the name under which
    the request is kept for replay (evaluation/sandbox/replay.py)."""
    return replay.digest_of(replay.request_body(request))


def _keep_for_replay(request: RunRequest) -> str:
    body = replay.request_body(request)
    digest = replay.digest_of(body)
    try:
        replay.store(body, digest)
    except OSError as exc:  # a full disk must not fail the run; the log line says so
        counters.log.warning("could not keep request %s for replay: %s", digest, exc)
    return digest
