"""How often a sandbox fails to start with the machine fully loaded, and whether a
user ever sees it.

Several worker processes (as several Celery workers on one host) start sandboxes
side by side from a few threads each, every process with the orphan-uid reaper
sweeping beside its starts (as the engine's pools run it), while a CPU hog spins
on every core. Each start is one of:
- `fresh`: a cold sandbox forked from a template (the engine's default cold run);
- `exec`: a cold sandbox started by exec, a new bwrap and interpreter;
- `warm`: a warm pool sandbox (exec'd bwrap, warm imports), through a pool that
  retires it after its lease, so every lease starts one;
- `docker`: a Docker sandbox through a pool the same way (when an engine and the
  sandbox image are there).
A start counts when the started sandbox also answers a ping.

Figures:
- start_failures: starts whose caller got an error (what a user would see);
  failure_rate = start_failures / starts. Goal 0.
- raw_start_failures, start_retries: start attempts that failed and were retried
  inside the pool or the cold-sandbox path, by reason, from the sandbox counters of
  each worker process (evaluation/sandbox/counters.py); absent where the code
  counts none.
- reaped: processes the reapers killed (what closed sandboxes left behind).

With --init-never-reaps N the start workers run as under a container whose init
never reaps (the bench is their child subreaper and waits only for its own
children) in a pids cgroup of N tasks (root; cgroup v1 or v2): a process a closed
sandbox orphans stays a zombie and holds one of the N, as it would until a lazy
init got to it. orphan_zombies counts them.

Usage: .venv/bin/python bench/sandbox_starts.py [--starts 10000] [--processes 3]
    [--threads 2] [--mix fresh=0.92,exec=0.06,warm=0.02] [--docker-starts 40]
    [--reap-every 0.1] [--no-load] [--init-never-reaps N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LOG_LEVEL", "WARNING")

KINDS = ("fresh", "exec", "warm", "docker")
DEFAULT_MIX = "fresh=0.92,exec=0.06,warm=0.02"


def parse_mix(text: str) -> dict[str, float]:
    """`fresh=0.9,exec=0.07,warm=0.03` -> shares that add up to 1."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        name, equals, share = part.partition("=")
        name = name.strip()
        if not equals or name not in KINDS or name == "docker":
            raise SystemExit(f"--mix: {part!r} is not kind=share with a kind among fresh, exec, warm")
        try:
            mix[name] = float(share)
        except ValueError:
            raise SystemExit(f"--mix: the share in {part!r} is not a number") from None
        if mix[name] < 0:
            raise SystemExit(f"--mix: the share in {part!r} is negative")
    total = sum(mix.values())
    if total <= 0:
        raise SystemExit("--mix: the shares add up to nothing")
    return {name: share / total for name, share in mix.items()}


def split_counts(starts: int, mix: dict[str, float]) -> dict[str, int]:
    """Whole counts per kind that add up to `starts` (largest remainders)."""
    exact = {name: starts * share for name, share in mix.items()}
    counts = {name: int(value) for name, value in exact.items()}
    for name in sorted(exact, key=lambda n: exact[n] - counts[n], reverse=True)[: starts - sum(counts.values())]:
        counts[name] += 1
    return counts


def docker_available() -> str | None:
    """Why Docker sandboxes cannot start here, or None."""
    from evaluation.sandbox.probe import backend_problem

    try:
        return backend_problem("docker")
    except Exception as exc:  # no SDK, no engine
        return f"the docker backend is unavailable: {exc}"


# -- one worker process ----------------------------------------------------------------------


class Worker:
    """Starts its share of sandboxes from `threads` threads, a reaper sweeping beside."""

    def __init__(self, counts: dict[str, int], threads: int, reap_every_s: float) -> None:
        from evaluation.sandbox import engine
        from evaluation.sandbox.pool import SandboxPool

        self.engine = engine
        self.counts = counts
        self.threads = threads
        self.reap_every_s = reap_every_s
        self.lock = threading.Lock()
        self.done: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.reaped = 0
        self.sweeps = 0
        # Pools retire a sandbox after its lease (tainted), so each lease starts one.
        self.pools = {
            backend: SandboxPool(engine.sandbox_factory(backend), size=threads, wait_s=600.0)
            for backend, kind in (("bwrap", "warm"), ("docker", "docker"))
            if counts.get(kind)
        }

    def _start_one(self, kind: str, seed: int) -> None:
        if kind in ("warm", "docker"):
            pool = self.pools["bwrap" if kind == "warm" else "docker"]
            with pool.lease(seed) as sandbox:
                sandbox.tainted = True  # retired on return: the next lease starts another
                if not sandbox.ping(10.0):
                    raise RuntimeError(f"a started {kind} sandbox does not answer a ping")
            return
        sandbox = self.engine.cold_sandbox("bwrap", seed, "fork" if kind == "fresh" else "exec")
        try:
            if not sandbox.ping(10.0):
                raise RuntimeError(f"a started {kind} sandbox does not answer a ping")
        finally:
            sandbox.close()

    def _loop(self, jobs: list[tuple[str, int]]) -> None:
        for kind, seed in jobs:
            try:
                self._start_one(kind, seed)
                failure = None
            except Exception as exc:
                failure = f"{kind}: {getattr(exc, 'anomaly', type(exc).__name__)}: {str(exc)[:160]}"
                detail = traceback.format_exc()[-1500:]
            with self.lock:
                self.done[kind] += 1
                if failure is not None:
                    self.failures[failure] += 1
                    self.examples.setdefault(failure, detail)

    def _reap(self, stop: threading.Event) -> None:
        from evaluation.sandbox.uids import reap_orphaned_uids

        while not stop.wait(self.reap_every_s):
            killed = reap_orphaned_uids()
            with self.lock:
                self.reaped += killed
                self.sweeps += 1

    def run(self) -> dict[str, Any]:
        from evaluation.sandbox import counters

        # Two hash seeds: a worker keeps one template per seed and core (templates.py), so
        # more seeds than that would measure template starts, not fresh sandboxes.
        jobs = [(kind, 1 + index % 2) for kind, count in self.counts.items() for index in range(count)]
        random.Random(os.getpid()).shuffle(jobs)  # noqa: S311 - kinds interleaved, differently in each process
        shares = [jobs[index :: self.threads] for index in range(self.threads)]
        stop = threading.Event()
        reaper = threading.Thread(target=self._reap, args=(stop,), daemon=True)
        if self.reap_every_s > 0:
            reaper.start()
        started = time.monotonic()
        threads = [threading.Thread(target=self._loop, args=(share,)) for share in shares]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall_s = time.monotonic() - started
        stop.set()
        for pool in self.pools.values():
            pool.close()
        self.engine.close_pools()
        snapshot = counters.snapshot()
        return {
            "done": dict(self.done),
            "failures": dict(self.failures),
            "examples": self.examples,
            "reaped": self.reaped,
            "sweeps": self.sweeps,
            "wall_s": wall_s,
            # Counted by the code itself where it counts start failures (absent otherwise).
            "start_failures": snapshot.get("start_failures"),
            "start_retries": snapshot.get("start_retries"),
        }


def worker_main(spec: str) -> None:
    options = json.loads(spec)
    report = Worker(options["counts"], options["threads"], options["reap_every_s"]).run()
    print(json.dumps(report))


# -- an init that never reaps, in a task-limited cgroup ------------------------------------------

PR_SET_CHILD_SUBREAPER = 36


class NonReapingInit:
    """This process as a container's init that never reaps, in a pids cgroup of its own
    limited to `pids_max` tasks: orphans of its children are reparented to it and stay
    zombies (until close(), which counts them, reaps them and removes the cgroup)."""

    def __init__(self, pids_max: int) -> None:
        if os.geteuid() != 0:
            raise ValueError("--init-never-reaps needs root (a cgroup of its own)")
        if pids_max < 50:
            raise ValueError("--init-never-reaps: give the run at least 50 tasks")
        root = Path("/sys/fs/cgroup")
        if (root / "cgroup.controllers").exists():  # cgroup v2
            if "pids" not in (root / "cgroup.subtree_control").read_text().split():
                (root / "cgroup.subtree_control").write_text("+pids")
            self.parent = root
        elif (root / "pids").is_dir():
            self.parent = root / "pids"
        else:
            raise ValueError("--init-never-reaps: no pids cgroup controller here")
        self.home = self.parent / self._own_cgroup()
        self.group = self.parent / f"sandbox-starts-{os.getpid()}"
        self.group.mkdir()
        (self.group / "pids.max").write_text(str(pids_max))
        (self.group / "cgroup.procs").write_text(str(os.getpid()))
        from evaluation.sandbox.harness import lite

        lite.prctl(PR_SET_CHILD_SUBREAPER, 1)

    def _own_cgroup(self) -> str:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _id, controllers, path = line.split(":", 2)
            if (self.parent.name == "pids" and "pids" in controllers.split(",")) or (
                self.parent.name != "pids" and controllers == ""
            ):
                return path.lstrip("/")
        return ""

    def close(self, own: set[int]) -> int:
        """Reap the zombies left to us (not `own`, our children the run waited for);
        returns how many there were."""
        from evaluation.sandbox.harness import lite

        lite.prctl(PR_SET_CHILD_SUBREAPER, 0)
        zombies = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in own:
                continue
            try:
                state, parent = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue
            if parent == str(os.getpid()) and state == "Z":
                zombies += 1
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        (self.home / "cgroup.procs").write_text(str(os.getpid()))
        self.group.rmdir()
        return zombies


# -- the whole run ---------------------------------------------------------------------------


def _merge(total: dict[str, int], part: dict[str, int] | None) -> None:
    for key, value in (part or {}).items():
        total[key] = total.get(key, 0) + int(value)


def run(
    *,
    starts: int = 10_000,
    processes: int = 3,
    threads: int = 2,
    mix: dict[str, float] | None = None,
    docker_starts: int = 40,
    reap_every_s: float = 0.1,
    load: bool = True,
    init_never_reaps: int = 0,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the starts and return the figures (see the module docstring)."""
    if starts < 1 or processes < 1 or threads < 1 or docker_starts < 0:
        raise ValueError("starts, processes and threads must be at least 1, docker starts at least 0")
    counts = split_counts(starts, mix or parse_mix(DEFAULT_MIX))
    docker_note = docker_available() if docker_starts else "not asked for"
    if docker_note is None:
        counts["docker"] = docker_starts
    per_process = [{kind: count // processes + (index < count % processes) for kind, count in counts.items()}
                   for index in range(processes)]  # fmt: skip
    init = NonReapingInit(init_never_reaps) if init_never_reaps else None
    hogs: list[subprocess.Popen] = []
    workers: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        if load:
            hog = "while True:\n    pass\n"
            hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(os.cpu_count() or 1)]
        for share in per_process:
            spec = json.dumps({"counts": share, "threads": threads, "reap_every_s": reap_every_s})
            workers.append(subprocess.Popen([sys.executable, __file__, "--worker", spec], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env))  # fmt: skip
        outputs = [worker.communicate() for worker in workers]
    finally:
        for hog_process in hogs:
            hog_process.kill()
            hog_process.wait()
        orphan_zombies = init.close({p.pid for p in hogs + workers}) if init is not None else None
    wall_s = time.monotonic() - started
    reports = []
    for worker, (out, err) in zip(workers, outputs, strict=True):
        if worker.returncode != 0 or not out.strip():
            raise RuntimeError(f"a start worker failed ({worker.returncode}): {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    done: dict[str, int] = {}
    failures: dict[str, int] = {}
    raw: dict[str, int] = {}
    retries: dict[str, int] = {}
    examples: dict[str, str] = {}
    counted = False
    for report in reports:
        _merge(done, report["done"])
        _merge(failures, report["failures"])
        examples.update(report["examples"])
        if report.get("start_failures") is not None:
            counted = True
            _merge(raw, report["start_failures"])
            _merge(retries, report["start_retries"])
    total = sum(done.values())
    failed = sum(failures.values())
    figures: dict[str, Any] = {
        "bench": "sandbox_starts",
        "failure_rate": round(failed / total, 6) if total else None,
        "starts": total,
        "start_failures": failed,
        "starts_by_kind": done,
        "failures_by_reason": failures,
        "raw_start_failures": sum(raw.values()) if counted else None,
        "raw_start_failures_by_reason": raw if counted else None,
        "start_retries": sum(retries.values()) if counted else None,
        "processes": processes,
        "threads_per_process": threads,
        "cpu_hogs": len(hogs),
        "reap_every_s": reap_every_s,
        "reaped": sum(r["reaped"] for r in reports),
        "reaper_sweeps": sum(r["sweeps"] for r in reports),
        "docker": docker_note or "yes",
        "init_never_reaps_pids_max": init_never_reaps or None,
        "orphan_zombies": orphan_zombies,
        "wall_s": round(wall_s, 1),
        "starts_per_s": round(total / wall_s, 1) if wall_s else None,
    }
    figures["examples"] = dict(list(examples.items())[:5])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10_000, help="bwrap starts in all (default 10000)")
    parser.add_argument("--processes", type=int, default=3, help="worker processes starting side by side")
    parser.add_argument("--threads", type=int, default=2, help="starting threads in each worker process")
    parser.add_argument("--mix", default=DEFAULT_MIX, help=f"shares of fresh, exec and warm (default {DEFAULT_MIX})")
    parser.add_argument("--docker-starts", type=int, default=40, help="Docker starts besides (0: none)")
    parser.add_argument("--reap-every", type=float, default=0.1, help="seconds between a worker's reaper sweeps")
    parser.add_argument("--no-load", action="store_true", help="no CPU hog on each core")
    parser.add_argument("--init-never-reaps", type=int, default=0, metavar="N",
                        help="run under an init that never reaps, in a cgroup of N tasks (root)")  # fmt: skip
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return
    try:
        figures = run(starts=args.starts, processes=args.processes, threads=args.threads, mix=parse_mix(args.mix),
                      docker_starts=args.docker_starts, reap_every_s=args.reap_every,
                      load=not args.no_load, init_never_reaps=args.init_never_reaps)  # fmt: skip
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    examples = figures.pop("examples")
    for reason, detail in examples.items():
        print(f"--- {reason}\n{detail}", file=sys.stderr)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
