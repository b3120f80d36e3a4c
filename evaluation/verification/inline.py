"""The whole pipeline in this process, without a broker: plan, run on threads, finish
(manage.py verify --sync, the HumanEval audit, tests)."""

from __future__ import annotations

import time
from typing import Any

from evaluation.models import Execution, Verification
from evaluation.sandbox.errors import SandboxUnavailable
from evaluation.verification.config import VerifyConfig
from evaluation.verification.executions import RunContext, execution_run
from evaluation.verification.finishing import verification_finish
from evaluation.verification.planning import RUN_ORDER, verification_plan
from evaluation.verification.threads import run_on_threads
from tasks_app.models import TaskVersion


def verifications_run(
    *,
    versions: list[TaskVersion],
    config: VerifyConfig | None = None,
    workers: int = 2,
    force: bool = False,
    requested_by: Any = None,
    progress: Any = None,
    timings: dict[str, float] | None = None,
) -> list[int]:
    """Verify `versions` in this process, without a broker.

    Steps: plan every version (one already verified under `config` plans nothing,
    unless `force`); run every execution still to run on `workers` threads, all
    references first (RUN_ORDER), each thread closing its own database connection;
    finish every verification. Returns the verification ids in the order of
    `versions`; `progress(done, total)` is called as executions end, and `timings`
    receives the seconds each step took (plan_s, run_s, finish_s).
    """
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        clock.append(time.perf_counter())
        if timings is not None:
            timings[name] = clock[-1] - clock[-2]

    planned = [verification_plan(version=v, config=config, requested_by=requested_by, force=force) for v in versions]
    ranked = Execution.objects.filter(pk__in=[pk for _, ids in planned for pk in ids]).values_list("role", "pk")
    todo = [pk for _, pk in sorted(ranked, key=lambda row: (RUN_ORDER[row[0]], row[1]))]
    lap("plan_s")

    context = RunContext()

    def one(execution_id: int) -> None:
        try:
            execution_run(execution_id=execution_id, context=context)
        except SandboxUnavailable:
            pass  # recorded on the execution: finishing reports the infrastructure error

    run_on_threads(todo, one, workers=workers, progress=progress)
    lap("run_s")
    ids = [verification.pk for verification, _ in planned]
    for verification_id in ids:
        verification_finish(verification_id=verification_id)
    lap("finish_s")
    return ids


def verification_run_inline(
    *, version: TaskVersion, config: VerifyConfig | None = None, workers: int = 2, force: bool = False
) -> Verification:
    """One version through the whole pipeline in this process (tests, the CLI)."""
    (verification_id,) = verifications_run(versions=[version], config=config, workers=workers, force=force)
    return Verification.objects.get(pk=verification_id)
