"""Reads of the verification pipeline (DESIGN.md: services and selectors)."""

from __future__ import annotations

import difflib
from pathlib import PurePosixPath
from typing import Any

from django.db.models import Count, QuerySet

from evaluation.models import Execution, MutantEquivalence, Verification, VerificationState
from evaluation.sandbox.languages import LANGUAGES
from evaluation.verification.generated.selectors import report_section
from evaluation.verification.repository import is_repository
from tasks_app.models import State, Task, TaskVersion


def versions_to_verify(*, everything: bool = False, slug: str = "", tag: str = "") -> QuerySet[TaskVersion]:
    """The latest version of each selected task (retired tasks left out)."""
    tasks = Task.objects.exclude(state=State.RETIRED).exclude(latest_version=None)
    if slug:
        tasks = tasks.filter(slug=slug)
    elif tag:
        tasks = tasks.filter(tags__name=tag)
    elif not everything:
        return TaskVersion.objects.none()
    ids = tasks.values_list("latest_version_id", flat=True)
    return TaskVersion.objects.filter(pk__in=ids).select_related("task").order_by("task__slug")


def latest_verification(version: TaskVersion) -> Verification | None:
    return version.verifications.order_by("-created_at").first()


def finished_verifications(versions: QuerySet[TaskVersion]) -> list[Verification]:
    """For each version, its newest finished verification (one query)."""
    rows = (
        Verification.objects.filter(version__in=versions, state=VerificationState.DONE)
        .select_related("version__task")
        .prefetch_related("flags")
        .order_by("version__task__slug", "version_id", "-finished_at")
    )
    seen: set[int] = set()
    newest = []
    for verification in rows:
        if verification.version_id not in seen:
            seen.add(verification.version_id)
            newest.append(verification)
    return newest


FINAL_STATUSES = (
    "passed", "failed", "error", "timeout", "memory_exceeded", "output_exceeded", "compile_error",
    "presentation_error", "sandbox_error", "checker_error",
)  # fmt: skip
METRIC_ROWS = (
    ("false_negative_rate", "Reference false-negative rate", "reference runs that failed"),
    ("flake_rate", "Flake rate", "solutions whose verdict changed between repeats"),
    ("adversarial_pass_rate", "Adversarial pass rate", "runs of known-wrong solutions that passed"),
    ("mutation_score", "Mutation score", "mutants killed (equivalent ones left out)"),
    ("known_wrong_pass_rate", "Wrong programs passing", "adversarial, mutant and probe runs that passed"),
)


def verification_report(verification: Verification, *, role: str = "", status: str = "") -> dict[str, Any]:
    """What the report page shows: metrics with intervals, flags, surviving mutants
    with their diffs, what the generated inputs proved of them and the tests they
    proposed, probe outcomes, and the runs (filtered by role and status)."""
    summary = verification.summary or {}
    metrics_rows = [
        {"key": key, "label": label, "means": means, **(summary.get(key) or {})}
        for key, label, means in METRIC_ROWS
        if summary.get(key)
    ]
    executions = verification.executions.all()
    reference = verification.version.solutions.filter(role="reference").order_by("label").first()
    survivors = set(summary.get("surviving_mutants") or [])
    equivalent = set(
        MutantEquivalence.objects.filter(task_id=verification.version.task_id).values_list("mutant_digest", flat=True)
    )
    repository = is_repository(verification.version)
    suffix = source_suffix(verification.version.language or "python")
    mutants = [
        {
            "execution": e,
            # A repository task's mutant is a whole patch (the reference with one change): shown as it is.
            "diff": e.code if repository else _diff(reference.code if reference else "", e.code, suffix),
            "equivalent": e.subject in equivalent,
        }
        for e in executions.filter(role="mutant", subject__in=survivors | equivalent).order_by("subject")
    ]
    runs = executions.defer("code")
    if role:
        runs = runs.filter(role=role)
    if status in FINAL_STATUSES or status in ("pending", "running"):
        runs = runs.filter(status=status)
    return {
        "summary": summary,
        "metric_rows": metrics_rows,
        "noise": summary.get("reward_noise"),
        "runtime": summary.get("runtime"),
        "flags": list(verification.flags.all()),
        "mutants": mutants,
        # The proven survivors are survivors: their diffs are the ones just made.
        "generated": report_section(
            verification,
            diffs={m["execution"].subject: m["diff"] for m in mutants},
            descriptions={m["execution"].subject: m["execution"].description for m in mutants},
        ),
        "probes": list(executions.filter(role="probe").defer("code").order_by("subject")),
        "runs": list(runs.order_by("role", "subject", "repeat")[:500]),
        "status_counts": dict(executions.values_list("status").annotate(n=Count("pk")).values_list("status", "n")),
        "repository": repository,
        "failed_references": _failed_references(executions) if repository else [],
    }


def _failed_references(executions: QuerySet[Execution]) -> list[dict[str, Any]]:
    """A repository task's reference runs that did not pass, each with every test's
    outcome (the passing ones too: which tests still pass says where the fault is)."""
    rows = executions.filter(role="reference").exclude(status__in=("passed", "sandbox_error", "pending", "running"))
    failed = []
    for run in rows.defer("code").order_by("subject", "repeat"):
        result = run.result or {}
        outcomes = result.get("outcomes") or {}
        tests = [{"name": name, **outcome} for name, outcome in sorted(outcomes.items())]
        failed.append({"run": run, "message": result.get("message", ""), "tests": tests,
                       "dropped": result.get("dropped") or []})  # fmt: skip
    return failed


def source_suffix(language: str) -> str:
    """The file suffix of a program in `language` (.py, .cpp, .java, ...), for diffs' headers."""
    runtime = LANGUAGES.get(language)
    return PurePosixPath(runtime.source_file).suffix if runtime is not None else ".py"


def _diff(reference: str, mutant: str, suffix: str = ".py") -> str:
    lines = difflib.unified_diff(
        reference.splitlines(True), mutant.splitlines(True), f"reference{suffix}", f"mutant{suffix}"
    )
    return "".join(lines)
