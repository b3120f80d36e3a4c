"""What a sandboxed check costs, against the baselines that matter, in one run.

Figures (ratios first; lower is better for *_over_*, higher for throughput):
- warm_over_bare_spawn: a trivial passing check through the warm bwrap pool,
  over a bare, unsandboxed `python3` subprocess per check doing the same
  (what common harnesses do), the two taking turns. Goal <= 0.25. Beside it,
  warm_back_to_back_ms: the same check with no pause between runs, where each
  run also waits for the end of the one before (a saturated pool).
- bwrap_cold_over_bare_spawn: a fresh bwrap sandbox per check (what the
  engine's cold runs and reruns get: forked from a template into new
  namespaces, evaluation/sandbox/templates.py) over the same bare subprocess.
  Goal <= 1.5. Beside it, bwrap_exec_cold_over_bare_spawn: a fresh sandbox
  started by exec, a new `bwrap` and interpreter per check (SANDBOX_COLD=exec,
  and the fallback where templates cannot work), and
  bwrap_floor_over_bare_spawn: that bwrap command starting the same
  interpreter that runs nothing (no harness, no judge, no solution process):
  what any sandbox started by exec pays before it does anything.
- docker_warm_over_docker_run: the Docker backend's warm pool over
  `docker run --rm` per check (when a Docker engine and the sandbox image are
  there; otherwise reported as null with the reason). Goal <= 0.1.
- humaneval_checks_per_s: all 164 canonical HumanEval solutions on all cores
  through the warm bwrap pool, beside humaneval_bare_spawn_checks_per_s (one
  bare python3 subprocess per check, same concurrency), and their ratio
  humaneval_warm_over_bare_spawn_throughput. Goal >= 200 checks/s, ratio >= 8.

Usage: .venv/bin/python bench/sandbox.py [--runs N] [--skip-docker]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
logging_off = os.environ.setdefault("LOG_LEVEL", "WARNING")

from evaluation.sandbox import engine, templates  # noqa: E402
from evaluation.sandbox.bwrap import bwrap_command  # noqa: E402
from evaluation.sandbox.harness_files import readable_copy  # noqa: E402
from evaluation.sandbox.pool import SandboxPool  # noqa: E402
from evaluation.sandbox.types import Limits, RunRequest  # noqa: E402
from tasks_app.datasets import humaneval_path  # noqa: E402

DATASET = humaneval_path()
PYTHON = "/usr/bin/python3"
TRIVIAL = "def add(a, b):\n    return a + b\n"
TRIVIAL_TEST = "assert add(1, 2) == 3"
CORES = os.cpu_count() or 1
HUMANEVAL_ROUNDS = 3


def trivial_request() -> RunRequest:
    return RunRequest(suite_kind="assertions", solution=TRIVIAL, tests={"hidden": [TRIVIAL_TEST]},
                      entry_point="add", limits=Limits(wall_s=10, cpu_s=10))  # fmt: skip


def bare_spawn(source: str, workdir: str) -> None:
    """The baseline: a fresh interpreter per check, no isolation at all."""
    completed = subprocess.run([PYTHON, "-c", source], cwd=workdir, capture_output=True, timeout=60, check=False)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.decode()[-500:])


def checked(result: object) -> None:
    """A sandboxed check that did not pass, or passed only on a rerun, measures nothing."""
    if str(result.status) != "passed" or result.attempts != 1:
        raise SystemExit(f"the trivial check did not pass first time: {result.status} {result.message}")


def per_check(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def side_by_side(contenders: list[tuple[Callable[[], object], int]], runs: int) -> list[float]:
    """Median seconds per call of each contender, measured in turns: in each round
    every contender runs once, except that one with `every` = n runs only every
    n-th round (for the slow ones)."""
    times: list[list[float]] = [[] for _ in contenders]
    for round_number in range(runs):
        for index, (fn, every) in enumerate(contenders):
            if round_number % every:
                continue
            start = time.perf_counter()
            fn()
            times[index].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def humaneval() -> list[dict]:
    with gzip.open(DATASET, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def docker_figures(runs: int) -> dict:
    if shutil.which("docker") is None:
        return {"docker_warm_over_docker_run": None, "docker_note": "no docker client"}
    probe = subprocess.run(["docker", "image", "inspect", "taskplatform-sandbox:latest"], capture_output=True)
    if probe.returncode != 0:
        return {"docker_warm_over_docker_run": None, "docker_note": "no sandbox image (make sandbox-image)"}
    try:
        pool = SandboxPool(engine.sandbox_factory("docker"), size=1)
        pool.warm(1)
    except Exception as exc:  # the backend is optional on this host
        return {"docker_warm_over_docker_run": None, "docker_note": f"docker backend unavailable: {exc}"}
    request = trivial_request()
    try:
        warm = per_check(lambda: engine.run(request, backend="docker", pool=pool), runs)
    finally:
        pool.close()
    source = f"{TRIVIAL}\n{TRIVIAL_TEST}\n"
    command = ["docker", "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/scratch",
               "--user", "65534:65534", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "taskplatform-sandbox:latest", "python3", "-c", source]  # fmt: skip
    cold = per_check(lambda: subprocess.run(command, capture_output=True, check=True), max(5, runs // 20))
    return {
        "docker_warm_over_docker_run": round(warm / cold, 4),
        "docker_warm_ms": round(warm * 1000, 2),
        "docker_run_ms": round(cold * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--skip-docker", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-sandbox-")
    source = f"{TRIVIAL}\n{TRIVIAL_TEST}\n"

    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=CORES)
    pool.warm()
    request = trivial_request()
    for _ in range(20):  # warm both sides
        engine.run(request, backend="bwrap", pool=pool)
        bare_spawn(source, workdir)
    # Side by side: the baseline and the sandboxed figures take turns, so that a
    # machine that drifts (a noisy neighbour, frequency scaling) skews both alike.
    floor_command = bwrap_command(harness=str(readable_copy()), python=PYTHON, hash_seed=1, warm=False)
    floor_command[-1] = "pass"  # the supervisor's entry, replaced by nothing to do
    engine.run(request, backend="bwrap", warm=False, cold="fork")  # the template's own start is not a check's
    bare, warm, cold, exec_cold, floor = side_by_side(
        [
            (lambda: bare_spawn(source, workdir), 1),
            (lambda: engine.run(request, backend="bwrap", pool=pool), 1),
            (lambda: checked(engine.run(request, backend="bwrap", warm=False, cold="fork")), 2),
            (lambda: checked(engine.run(request, backend="bwrap", warm=False, cold="exec")), 5),
            (lambda: subprocess.run(floor_command, capture_output=True, check=True), 5),
        ],
        args.runs,
    )
    if templates.shelf.unsupported:
        raise SystemExit(f"the cold figure would be the exec one: {templates.shelf.unsupported}")
    # And back to back, with no pause: each run then also waits for the end of the
    # one before (its sweep, the next spare's fork), as in a saturated pool.
    back_to_back = per_check(lambda: engine.run(request, backend="bwrap", pool=pool), args.runs)

    rows = humaneval()
    requests = [
        RunRequest(suite_kind="check_function", solution=r["prompt"] + r["canonical_solution"],
                   tests={"hidden": [r["test"]]}, entry_point=r["entry_point"], limits=Limits(wall_s=20, cpu_s=20))
        for r in rows
    ]  # fmt: skip
    scripts = [f"{r['prompt']}{r['canonical_solution']}\n{r['test']}\ncheck({r['entry_point']})\n" for r in rows]
    sandboxed_rounds, bare_rounds = [], []
    with ThreadPoolExecutor(CORES) as workers:
        for _ in range(HUMANEVAL_ROUNDS):  # in turns, as above; the median round of each
            start = time.perf_counter()
            results = list(workers.map(lambda q: engine.run(q, backend="bwrap", pool=pool), requests))
            sandboxed_rounds.append(time.perf_counter() - start)
            start = time.perf_counter()
            list(workers.map(lambda s: bare_spawn(s, workdir), scripts))
            bare_rounds.append(time.perf_counter() - start)
    sandboxed_s, bare_s = statistics.median(sandboxed_rounds), statistics.median(bare_rounds)
    pool.close()
    engine.close_pools()  # the templates the cold checks forked from
    failed = [rows[i]["task_id"] for i, r in enumerate(results) if not r.passed]
    if failed:
        raise SystemExit(f"canonical solutions failed in the sandbox: {failed}")

    figures = {
        "bench": "sandbox",
        "warm_over_bare_spawn": round(warm / bare, 4),
        "bwrap_cold_over_bare_spawn": round(cold / bare, 4),
        "bwrap_exec_cold_over_bare_spawn": round(exec_cold / bare, 4),
        "bwrap_floor_over_bare_spawn": round(floor / bare, 4),
    }
    if not args.skip_docker:
        figures.update(docker_figures(args.runs))
    he_rate, bare_rate = len(rows) / sandboxed_s, len(rows) / bare_s
    figures.update(
        {
            "humaneval_warm_over_bare_spawn_throughput": round(he_rate / bare_rate, 2),
            "humaneval_checks_per_s": round(he_rate, 1),
            "humaneval_bare_spawn_checks_per_s": round(bare_rate, 1),
            "warm_ms": round(warm * 1000, 3),
            "warm_back_to_back_ms": round(back_to_back * 1000, 3),
            "bwrap_cold_ms": round(cold * 1000, 2),
            "bwrap_exec_cold_ms": round(exec_cold * 1000, 2),
            "bwrap_floor_ms": round(floor * 1000, 2),
            "bare_spawn_ms": round(bare * 1000, 2),
            "cores": CORES,
            "runs": args.runs,
        }
    )
    shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
