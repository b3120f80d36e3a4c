"""What the reward API costs over the sandbox engine it drives, in one run.

Figures:
- reward_over_raw_sandbox: completions scored per second through the reward API
  (real HTTP to gunicorn with a training job's token, batches of 16 from
  concurrent clients, a real Celery worker on Redis running the chunks on its
  warm bwrap pool, PostgreSQL holding every batch and verdict) over the raw engine's
  (`evaluation.sandbox.engine.run` on the same warm pool size, on threads, no
  database, no HTTP) on the very same completions. Goal >= 0.8.
- reward_latency_p50_s / reward_latency_p99_s: one batch of 16, posted to answered.
- reward_completions_per_s and raw_completions_per_s, beside them; the ratio of
  each round; and CPU milliseconds a completion by owner (web, worker,
  PostgreSQL, Redis, sandbox processes, this process's clients; the raw side:
  this process's engine threads and the sandboxes), which say where the
  difference goes.

The completions: every HumanEval task's canonical solution (passes) and a wrong
one (returns None), 328 in all. Side by side: after a warm-up of both, each of
ROUNDS rounds runs them all through the raw engine, then through the API. The
worker is one Celery process with CORES task threads sharing one warm pool of
CORES x SLOTS sandboxes (default SLOTS 1: CORES runs at once, as the raw
engine's CORES threads); `--worker-pool prefork` runs CORES processes of SLOTS
each instead, for comparison. The database is a
throwaway PostgreSQL database, dropped at the end; the broker is Redis database
7, emptied before and after. Progress goes to stderr; the last line of stdout
is one JSON object.

Usage: .venv/bin/python bench/reward.py [--rounds R] [--clients C] [--batch B] [--slots S] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from stack import CORES, ROOT, in_throwaway_database, platform_env, say, server_url, start_platform

sys.path.insert(0, str(ROOT))
SCRATCH = tempfile.mkdtemp(prefix="bench-reward-")
DB_NAME = f"bench_reward_{os.getpid()}"
REDIS_URL = "redis://127.0.0.1:6379/7"
LOG_LEVEL = os.environ.get("BENCH_LOG_LEVEL", "WARNING")  # INFO: the worker logs every run
BASE_URL = os.environ.get("DATABASE_URL") or server_url()
DB_URL = BASE_URL.rsplit("/", 1)[0] + f"/{DB_NAME}"
ENV = platform_env(DB_URL, REDIS_URL, Path(SCRATCH))
os.environ.update(ENV)


def cpu_by_owner(groups: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far (with the children they reaped) by the live processes of
    each named process group, by PostgreSQL's and Redis's processes, and by
    everything else: where the API path spends what the raw engine does not."""
    tick = os.sysconf("SC_CLK_TCK")
    owners = {name: 0 for name in (*groups, "postgres", "redis", "sandboxes")}
    by_group = {pgid: name for name, pgid in groups.items()}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        used = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
        if int(fields[2]) in by_group:  # field 5, pgrp, counted after the ")" of the name
            owners[by_group[int(fields[2])]] += used
        elif name.startswith("postgres"):
            owners["postgres"] += used
        elif name.startswith("redis"):
            owners["redis"] += used
        elif name in ("bwrap", "python3"):
            owners["sandboxes"] += used
    return {k: v / tick for k, v in owners.items()}


def system_cpu_s() -> float:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(v) for v in fields) - int(fields[3]) - int(fields[4])  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the sorted values' item round(q * (n - 1))."""
    return float(np.quantile(values, q, method="nearest"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1, help="each completion this many times a round")
    parser.add_argument("--rounds", type=int, default=5, help="raw engine, then the API, this many times")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--limit", type=int, default=None, help="only the first N HumanEval tasks")
    slots_help = "sandbox slots in each of the worker's CORES processes (the raw engine: CORES threads)"
    parser.add_argument("--slots", type=int, default=1, help=slots_help)
    # threads: how a sandbox-queue worker is best run (docs/rewards.md); prefork for comparison.
    parser.add_argument("--worker-pool", choices=["prefork", "threads"], default="threads")
    parser.add_argument("--web-processes", type=int, default=1, help="gunicorn worker processes")
    args = parser.parse_args()

    figures = in_throwaway_database(BASE_URL, DB_NAME, REDIS_URL, lambda processes: run(args, processes))
    print(json.dumps(figures))


def run(args: argparse.Namespace, processes: list[subprocess.Popen]) -> dict:
    import requests

    from evaluation.sandbox import engine
    from evaluation.sandbox.run_requests import run_request_for
    from evaluation.verification import audit
    from tasks_app.models import State, Task
    from trainer_bridge.services.jobs import job_register
    from trainer_bridge.services.pools import pool_create, snapshot_create
    from trainer_bridge.services.rewards import prepared_code

    say(f"importing HumanEval (logs under {SCRATCH})")
    actor = audit.auditor_user()
    versions = audit.latest_versions(audit.dataset_import(path=audit.default_dataset(), actor=actor,
                                                          limit=args.limit))  # fmt: skip
    items = []
    for version in versions:
        reference = version.solutions.filter(role="reference").first()
        signature = reference.code.split("\n")
        wrong = "\n".join(signature) + "\n\n\ndef " + version.entry_point + "(*args, **kwargs):\n    return None\n"
        items += [(version, reference.code), (version, wrong)]
    items = items * args.repeat
    say(f"{len(items)} completions ({len(versions)} tasks, a right and a wrong answer each, x{args.repeat})")

    requests_raw = [run_request_for(v, prepared_code(c, v)) for v, c in items]

    # -- the reward API: gunicorn and one Celery worker, over HTTP ------------------------------
    # prefork: CORES processes, each with its own warm pool of SLOTS; threads: one process,
    # CORES task threads sharing one warm pool of CORES x SLOTS (no pipe between processes).
    slots = args.slots * (CORES if args.worker_pool == "threads" else 1)
    base = start_platform(processes, Path(SCRATCH), name="bench-reward", worker_pool=args.worker_pool, slots=slots,
                          web_processes=args.web_processes, web_threads=args.clients * 2,
                          log_level=LOG_LEVEL)  # fmt: skip
    worker, web = processes[-2], processes[-1]
    # As a training job asks: with its job's token, held to its snapshot (approval is a
    # reviewer's click; here it is the bench's setup).
    for version in versions:
        Task.objects.filter(pk=version.task_id).update(state=State.APPROVED, approved_version=version)
    snapshot, _ = snapshot_create(pool=pool_create(slug="bench-reward", title="Bench", criteria={}))
    secret = job_register(user=actor, name="bench-reward", snapshot_hash=snapshot.hash).secret
    bodies = [
        [{"version_hash": v.content_hash, "completion": c, "id": str(n)} for n, (v, c) in enumerate(chunk)]
        for chunk in (items[i : i + args.batch] for i in range(0, len(items), args.batch))
    ]

    sessions = threading.local()  # one keep-alive connection a client, as the platform's client keeps

    def post(body: list[dict]) -> tuple[float, dict]:
        http = getattr(sessions, "http", None) or requests.Session()
        sessions.http = http
        sent = time.perf_counter()
        headers = {"Authorization": f"Bearer {secret}", "Idempotency-Key": uuid.uuid4().hex}
        for attempt in range(3):
            try:
                answer = http.post(f"{base}/api/v1/rewards", json={"completions": body, "deadline_s": 300},
                                   headers=headers, timeout=400)  # fmt: skip
                break
            except requests.ConnectionError:
                # The server closed an idle keep-alive connection as we reused it: the
                # idempotency key makes sending the batch again safe (as the client does).
                if attempt == 2:
                    raise
        answer.raise_for_status()
        return time.perf_counter() - sent, answer.json()

    pool = engine.get_pool("bwrap")
    groups = {"web": web.pid, "worker": worker.pid}
    raw_s = api_s = 0.0
    raw_cpu = {"engine": 0.0, "sandboxes": 0.0}
    cpu: dict[str, float] = {}
    latencies: list[float] = []
    rounds: list[float] = []
    raw_passed = api_passed = unfinished = 0
    # Side by side: each round runs every completion through the raw engine, then through
    # the API, so a machine that slows down or speeds up weighs on both alike.
    with ThreadPoolExecutor(max_workers=pool.size) as threads, ThreadPoolExecutor(max_workers=args.clients) as clients:
        say("warming both: the raw engine's pool and the worker's")
        list(threads.map(engine.run, requests_raw[: 4 * pool.size]))
        list(clients.map(post, bodies[: args.clients * 2]))
        for round_ in range(args.rounds):
            before, me_before = cpu_by_owner({}), sum(os.times()[:2])
            started = time.perf_counter()
            raw_results = list(threads.map(engine.run, requests_raw))
            raw_round = time.perf_counter() - started
            after, me_after = cpu_by_owner({}), sum(os.times()[:2])
            raw_cpu["engine"] += me_after - me_before
            raw_cpu["sandboxes"] += after["sandboxes"] - before["sandboxes"]
            raw_passed += sum(1 for r in raw_results if r.status == "passed")

            before, all_before, me_before = cpu_by_owner(groups), system_cpu_s(), sum(os.times()[:2])
            started = time.perf_counter()
            answered = list(clients.map(post, bodies))
            api_round = time.perf_counter() - started
            after, all_after, me_after = cpu_by_owner(groups), system_cpu_s(), sum(os.times()[:2])
            for key in after:
                cpu[key] = cpu.get(key, 0.0) + after[key] - before.get(key, 0.0)
            cpu["clients"] = cpu.get("clients", 0.0) + me_after - me_before
            cpu["all"] = cpu.get("all", 0.0) + all_after - all_before
            latencies += [seconds for seconds, _ in answered]
            results = [r for _, body in answered for r in body["results"]]
            api_passed += sum(1 for r in results if r["status"] == "passed")
            unfinished += sum(1 for _, body in answered if body["state"] != "done")
            raw_s, api_s = raw_s + raw_round, api_s + api_round
            rounds.append(raw_round / api_round)
            say(f"round {round_ + 1}: raw {len(items) / raw_round:.1f}/s, API {len(items) / api_round:.1f}/s, "
                f"ratio {raw_round / api_round:.3f}")  # fmt: skip
    engine.close_pools()
    done = len(items) * args.rounds
    raw_rate, api_rate = done / raw_s, done / api_s
    say("CPU ms a completion, API: " + ", ".join(f"{k} {1000 * v / done:.2f}" for k, v in cpu.items()))
    say("CPU ms a completion, raw: " + ", ".join(f"{k} {1000 * v / done:.2f}" for k, v in raw_cpu.items()))
    p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
    say(f"reward API: {api_rate:.1f} completions/s ({api_passed} passed), raw engine {raw_rate:.1f}/s "
        f"({raw_passed} passed); p50 {p50:.3f} s, p99 {p99:.3f} s")  # fmt: skip
    if api_passed != raw_passed or unfinished:
        say(f"WARNING: the API passed {api_passed}, the raw engine {raw_passed}; {unfinished} batches unfinished")
    return {
        "completions": len(items),
        "rounds": args.rounds,
        "batch": args.batch,
        "clients": args.clients,
        "worker": f"{args.worker_pool}, concurrency {CORES}, {slots} sandbox slot(s) a process; raw engine: "
        f"{pool.size} threads",
        "raw_completions_per_s": round(raw_rate, 2),
        "reward_completions_per_s": round(api_rate, 2),
        "reward_latency_p50_s": round(p50, 4),
        "reward_latency_p99_s": round(p99, 4),
        "verdicts_agree": api_passed == raw_passed and not unfinished,
        "cpu_ms_per_completion": {k: round(1000 * v / done, 2) for k, v in cpu.items()},
        "raw_cpu_ms_per_completion": {k: round(1000 * v / done, 2) for k, v in raw_cpu.items()},
        "ratio_by_round": [round(r, 3) for r in rounds],
        "reward_over_raw_sandbox": round(api_rate / raw_rate, 4),
    }


if __name__ == "__main__":
    main()
