"""All 164 canonical HumanEval solutions pass in the sandbox: the harness runs
the real data set's check functions with only plain data crossing back."""

from __future__ import annotations

import gzip
import json
from concurrent.futures import ThreadPoolExecutor

from evaluation.sandbox import engine
from evaluation.sandbox.types import Limits, RunRequest, Status
from tasks_app.datasets import humaneval_path

DATASET = humaneval_path()


def humaneval_requests() -> list[tuple[str, RunRequest]]:
    with gzip.open(DATASET, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [
        (
            row["task_id"],
            RunRequest(
                suite_kind="check_function",
                solution=row["prompt"] + row["canonical_solution"],
                tests={"setup": "", "visible": [], "hidden": [row["test"]]},
                entry_point=row["entry_point"],
                limits=Limits(wall_s=20, cpu_s=20, memory_mb=512),
            ),
        )
        for row in rows
    ]


def test_all_164_canonical_solutions_pass_on_each_backend(sandbox):
    backend, pool = sandbox
    cases = humaneval_requests()
    with ThreadPoolExecutor(pool.size) as workers:
        results = list(workers.map(lambda c: engine.run(c[1], backend=backend, pool=pool), cases))
    failures = {task: (r.status, r.message[:200]) for (task, _), r in zip(cases, results, strict=True) if not r.passed}
    assert len(cases) == 164
    assert failures == {}
    assert {r.status for r in results} == {Status.PASSED}


def test_a_wrong_humaneval_solution_fails(sandbox):
    backend, pool = sandbox
    task, request = humaneval_requests()[0]
    wrong = RunRequest(**{**request.__dict__, "solution": request.solution.replace("return True", "return False")})
    result = engine.run(wrong, backend=backend, pool=pool)
    assert result.status == Status.FAILED, (task, result.message)
