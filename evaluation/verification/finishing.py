"""Finishing a verification once every execution has a final status: score it, flag it,
and move its task to verified or flagged.

Idempotent: finishing is claimed with a conditional update, so it happens once; a
verification finished already decides a task still waiting for it by its recorded
verdict.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from evaluation.models import Flag, MutantEquivalence, Verification, VerificationState
from evaluation.verification import figures, generated
from evaluation.verification.config import VerifyConfig
from evaluation.verification.flags import flags_for
from evaluation.verification.generated.judgement import survivors_judged
from evaluation.verification.generated.proposals import proposals_record
from evaluation.verification.repository import verdict_timeout_s
from tasks_app.models import State, TaskVersion
from tasks_app.services import task_transition


def outcomes_of(verification: Verification) -> list[figures.Outcome]:
    equivalent = set(
        MutantEquivalence.objects.filter(task_id=verification.version.task_id).values_list("mutant_digest", flat=True)
    )
    return [
        figures.Outcome(
            role=role,
            subject=subject,
            repeat=repeat,
            status=status,
            wall_s=wall_s or 0.0,
            equivalent=role == "mutant" and subject in equivalent,
        )
        for role, subject, repeat, status, wall_s in verification.executions.exclude(role=generated.ROLE).values_list(
            "role", "subject", "repeat", "status", "wall_s"
        )
    ]


def generated_of(verification: Verification, summary: dict[str, Any]) -> tuple[dict[str, Any], dict | None]:
    """The survivors judged on generated inputs (judgement.py), and the run's data."""
    row = verification.executions.filter(role=generated.ROLE).values_list("status", "result").first()
    status, result = row if row else ("", None)
    data = result.get("data") if isinstance(result, dict) else None
    judged = survivors_judged(status=status, data=data, survivors=list(summary.get("surviving_mutants") or []),
                              mutation_score=summary.get("mutation_score"))  # fmt: skip
    wrong = (data or {}).get("wrong_solutions") if status == "passed" else None
    if isinstance(wrong, dict):  # a stdio task's generator: the wrong solutions its inputs catch
        passing = verification.executions.filter(role="adversarial", status="passed")
        escaped = set(passing.values_list("subject", flat=True))
        judged["wrong_solutions"] = {
            "run": len(wrong),
            "passing_the_suite": sorted(escaped & set(wrong)),
            "caught": sorted(label for label, v in wrong.items() if v.get("outcome") == "differs"),
            "caught_passing_the_suite": sorted(label for label, v in wrong.items()
                                               if v.get("outcome") == "differs" and label in escaped),
        }  # fmt: skip
        judged["inputs"]["examples"] = dict((data or {}).get("invalid_examples") or {})
    return judged, data


def broken_setup(verification: Verification) -> dict[str, Any] | None:
    """Whether the suite's setup raised with a reference solution (the judge's
    setup_error): then the task is broken, whatever the solutions do. Such a run is
    `failed`, not `sandbox_error`, so it is never retried as the platform's fault.
    {"runs", "reference_runs", "traceback"} (the first traceback), or None."""
    results = list(verification.executions.filter(role="reference").values_list("result", flat=True))
    tracebacks = [r["setup_error"] for r in results if isinstance(r, dict) and r.get("setup_error")]
    if not tracebacks:
        return None
    return {"runs": len(tracebacks), "reference_runs": len(results), "traceback": str(tracebacks[0])[:4000]}


def broken_checker(verification: Verification) -> dict[str, Any] | None:
    """Whether the task's checker failed on any run's output (`checker_error`: not the
    solution's, left out of every metric): then the task is broken.
    {"runs", "by_role", "message"} (the first failure's message), or None."""
    rows = list(verification.executions.filter(status="checker_error").values_list("role", "result"))
    if not rows:
        return None
    by_role = dict(Counter(role for role, _ in rows))
    first = next((r for _, r in rows if isinstance(r, dict) and r.get("message")), {})
    return {"runs": len(rows), "by_role": by_role, "message": str(first.get("message") or "")[:4000]}


def verification_finish(*, verification_id: int) -> Verification:
    """Score, flag and decide, once every execution has a final status.

    An execution left with sandbox_error makes the verification an
    infrastructure error (retried later), never a flag on the task. One finished
    already (by another worker, or before its task was submitted: submitting plans
    the same verification, which runs nothing and lands here) decides a task still
    waiting for it by its recorded verdict (`_decide_again`)."""
    verification = Verification.objects.select_related("version__task").get(pk=verification_id)
    if verification.state == VerificationState.DONE:
        _decide_again(verification)
        return verification
    counts = dict(verification.executions.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    if counts.get("pending") or counts.get("running"):
        return verification
    if counts.get("sandbox_error"):
        Verification.objects.filter(pk=verification_id).exclude(state=VerificationState.DONE).update(
            state=VerificationState.INFRASTRUCTURE_ERROR
        )
        verification.refresh_from_db()
        return verification
    version = verification.version
    # A repository task's runs are held to the verdict's timeout (its time limit is not theirs).
    summary = figures.summarise(outcomes_of(verification), time_limit_s=verdict_timeout_s(version))
    summary["broken_setup"] = broken_setup(verification)
    summary["broken_checker"] = broken_checker(verification)
    summary["generated"], explored = generated_of(verification, summary)
    found = flags_for(summary, version=version)
    verdict = "flagged" if any(flag.severity == "error" for flag in found) else "verified"
    with transaction.atomic():
        claimed = (
            Verification.objects.filter(pk=verification_id)
            .exclude(state=VerificationState.DONE)
            .update(
                state=VerificationState.DONE,
                summary=summary,
                verdict=verdict,
                finished_at=timezone.now(),
                done=F("total"),
            )
        )
        if not claimed:  # finished by another worker meanwhile, which decided
            verification.refresh_from_db()
            _decide_again(verification)
            return verification
        Flag.objects.filter(verification_id=verification_id).delete()
        Flag.objects.bulk_create(
            Flag(
                verification_id=verification_id, code=f.code, severity=f.severity, message=f.message, details=f.details
            )
            for f in found
        )
        proposals_record(verification=verification, generated=summary["generated"], data=explored)
        _decide(version, verdict)
    verification.refresh_from_db()
    return verification


def _decide(version: TaskVersion, verdict: str) -> None:
    """Move the task, if this version is still the one waiting for a verdict."""
    task = version.task
    task.refresh_from_db()
    if task.state != State.SUBMITTED or task.latest_version_id != version.pk:
        return  # withdrawn, edited or decided meanwhile: the verdict is kept on the version only
    note = "verification found no blocking problem" if verdict == "verified" else "verification raised flags"
    task_transition(
        actor=None, task=task, to_state=State.VERIFIED if verdict == "verified" else State.FLAGGED, note=note
    )


def _decide_again(verification: Verification) -> None:
    """Decide by a finished verification's recorded verdict, as when it finished, if
    it is of the current configuration (the one a submitted version waits for).
    A no-op for a task that is not waiting (`_decide`), so as often as it is called."""
    if verification.state != VerificationState.DONE or not verification.verdict:
        return
    if verification.config_hash != VerifyConfig.from_settings().hash():
        return  # an older or a custom configuration: the task waits for the current one
    _decide(verification.version, verification.verdict)


def verification_verdict_apply(*, version_id: int) -> bool:
    """Move a submitted task at once by the verdict its version already has under the
    current configuration (verified, then submitted), as a verification finishing
    now would: to verified or flagged by its flags. Returns whether there was one
    (False: a verification has to run)."""
    found = (
        Verification.objects.filter(
            version_id=version_id, config_hash=VerifyConfig.from_settings().hash(), state=VerificationState.DONE
        )
        .select_related("version__task")
        .first()
    )
    if found is None or not found.verdict:
        return False
    _decide(found.version, found.verdict)
    return True
