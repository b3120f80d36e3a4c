"""Runs the slow hostile programs beside the suite, in a process of their own.

A program that stops its judge costs a host deadline per attempt, two attempts
per run: too long to wait for in line. The suite starts this module at its
outset (`python -m tests.security.slow_runner BACKEND[-fresh] NAME...`), it runs the
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
from .hostcheck import TEMPLATE_AT_REST, process_table, subtree


def _run(backend: str, pool: SandboxPool | None, name: str, results: dict[str, Any]) -> None:
    case = BY_NAME[name]
    runs = []
    try:
        for _ in range(case.tries):
            started = time.monotonic()
            if pool is None:  # fresh sandboxes forked from a template, every run cold
                result = engine.run(case.request(), backend=backend, warm=False, cold="fork")
            else:
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


def template_leftovers(wait_s: float = 10.0) -> list[str]:
    """Processes below an idle sandbox template other than bwrap and the template."""
    from evaluation.sandbox.templates import shelf

    deadline = time.monotonic() + wait_s
    while True:
        table = process_table()
        left = []
        for template in shelf.idle_templates():
            if template.pid in table:
                tree = subtree(table, template.pid)
                if len(tree) != TEMPLATE_AT_REST:
                    left += [f"{pid} below template {template.pid}: {table[pid][2][:120]}" for pid in sorted(tree)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def main(variant: str, names: list[str]) -> dict[str, Any]:
    backend, fresh = variant.removesuffix("-fresh"), variant.endswith("-fresh")
    pool = SandboxPool(engine.sandbox_factory(backend), size=max(1, len(names)))
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=_run, args=(backend, None if fresh else pool, name, results)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    honest = engine.run(HONEST, backend=backend, pool=pool)
    pool.close()
    # The templates that the cold reruns forked from live on: first, that nothing a fresh
    # sandbox started is left below them; then they go, and nothing may be left at all.
    survivors = template_leftovers()
    engine.close_pools()
    deadline = time.monotonic() + 10.0
    while True:
        table = process_table()
        left = [
            f"{pid} (uid {table[pid][0]}): {table[pid][2][:120]}"
            for pid in sorted(subtree(table, os.getpid()))
            if table[pid][0] != os.getuid()
        ]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    survivors += left
    honest_ok = str(honest.status) == "passed" and honest.attempts == 1 and not honest.anomaly
    return {"results": results, "survivors": survivors, "honest_after": None if honest_ok else honest.as_dict()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2:])), flush=True)
