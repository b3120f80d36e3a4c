"""Runs the slow hostile programs beside the suite, in a process of their own.

A program that stops its judge costs a host deadline per attempt, two attempts
per run: too long to wait for in line. The suite starts this module at its
outset (`python -m tests.security.slow_runner BACKEND NAME...`), it runs the
cases through the engine in parallel, and prints one JSON object: per case its
results, then whatever of its own sandboxes outlived them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from evaluation.sandbox import engine
from evaluation.sandbox.pool import SandboxPool

from .cases import BY_NAME, HONEST
from .hostcheck import process_table, subtree


def _run(backend: str, pool: SandboxPool, name: str, results: dict[str, Any]) -> None:
    case = BY_NAME[name]
    runs = []
    try:
        for _ in range(case.tries):
            started = time.monotonic()
            result = engine.run(case.request(), backend=backend, pool=pool)
            runs.append(
                {"status": str(result.status), "anomaly": result.anomaly, "attempts": result.attempts,
                 "message": result.message[:1000], "elapsed_s": round(time.monotonic() - started, 3)}
            )  # fmt: skip
            if str(result.status) not in case.expect:
                break
    except Exception as exc:  # reported, then judged by the test that waits for us
        runs.append({"status": "runner_error", "message": f"{type(exc).__name__}: {exc}"})
    results[name] = runs


def main(backend: str, names: list[str]) -> dict[str, Any]:
    pool = SandboxPool(engine.sandbox_factory(backend), size=max(1, len(names)))
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=_run, args=(backend, pool, name, results)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    honest = engine.run(HONEST, backend=backend, pool=pool)
    pool.close()
    survivors: list[str] = []
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        table = process_table()
        survivors = [
            f"{pid} (uid {table[pid][0]}): {table[pid][2][:120]}"
            for pid in sorted(subtree(table, os.getpid()))
            if table[pid][0] != os.getuid()
        ]
        if not survivors:
            break
        time.sleep(0.1)
    honest_ok = str(honest.status) == "passed" and honest.attempts == 1 and not honest.anomaly
    return {"results": results, "survivors": survivors, "honest_after": None if honest_ok else honest.as_dict()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2:])), flush=True)
