"""What is known to be right and wrong for each task of a snapshot: the curators'
reference and adversarial solutions and the reference's mutants, each with its
outcome in the version's latest finished verification.

It is what a replay policy answers with (trainer_bridge/trainer/replay.py): a
replay of references must earn 1 within the reward noise, a replay of killed
mutants 0. These programs reveal the answers as much as the hidden tests do, so
the endpoint needs the `export:tests` scope (api/views.py).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from evaluation.models import Execution, MutantEquivalence, Verification, VerificationState
from evaluation.sandbox.types import Status
from tasks_app.models import Solution
from trainer_bridge.models import Snapshot, SnapshotMember

EXPECTED = {"reference": "pass", "adversarial": "fail"}
UNJUDGED = frozenset({"pending", "running", str(Status.SANDBOX_ERROR), str(Status.CHECKER_ERROR)})


def members_of(snapshot: Snapshot) -> QuerySet[SnapshotMember]:
    return SnapshotMember.objects.filter(snapshot=snapshot).select_related("task").order_by("position")


def member_solutions(members: list[SnapshotMember]) -> list[dict[str, Any]]:
    """For each member (in order): its solutions and mutants with their outcomes. Four
    queries for any number of members."""
    version_ids = [m.version_id for m in members]
    solutions: dict[int, list[dict[str, Any]]] = {v: [] for v in version_ids}
    for row in (Solution.objects.filter(version_id__in=version_ids).order_by("version_id", "role", "label")
                .values("version_id", "role", "label", "code")):  # fmt: skip
        solutions[row["version_id"]].append(row)
    latest = _latest_verifications(version_ids)
    runs: dict[int, list[dict[str, Any]]] = {v: [] for v in version_ids}
    by_verification = {verification["id"]: version for version, verification in latest.items()}
    for row in (Execution.objects.filter(verification_id__in=by_verification, repeat=0)
                .order_by("verification_id", "role", "subject")
                .values("verification_id", "role", "subject", "description", "code", "status")):  # fmt: skip
        runs[by_verification[row["verification_id"]]].append(row)
    equivalent = set(MutantEquivalence.objects.filter(task_id__in={m.task_id for m in members})
                     .values_list("task_id", "mutant_digest"))  # fmt: skip
    return [_member_body(m, solutions[m.version_id], runs[m.version_id], latest.get(m.version_id), equivalent)
            for m in members]  # fmt: skip


def _latest_verifications(version_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Version id -> its most recently finished verification (id, verdict, finished_at)."""
    latest: dict[int, dict[str, Any]] = {}
    done = Verification.objects.filter(version_id__in=version_ids, state=VerificationState.DONE)
    for row in done.order_by("version_id", "finished_at", "id").values("id", "version_id", "verdict", "finished_at"):
        latest[row["version_id"]] = row  # ascending: the last one wins
    return latest


def _member_body(
    member: SnapshotMember,
    solutions: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    verification: dict[str, Any] | None,
    equivalent: set[tuple[int, str]],
) -> dict[str, Any]:
    outcome = {(r["role"], r["subject"]): r["status"] for r in runs}
    known = [{"kind": s["role"], "label": s["label"], "code": s["code"], "expected": EXPECTED[s["role"]],
              "outcome": outcome.get((s["role"], s["label"]))} for s in solutions]  # fmt: skip
    mutants = []
    for run in runs:
        if run["role"] != "mutant":
            continue
        if (member.task_id, run["subject"]) in equivalent:
            verdict = "equivalent"
        elif run["status"] in UNJUDGED:
            verdict = "unjudged"
        else:
            verdict = "survived" if run["status"] == Status.PASSED else "killed"
        mutants.append({"id": run["subject"], "description": run["description"], "code": run["code"],
                        "outcome": run["status"], "verdict": verdict})  # fmt: skip
    checked = None
    if verification is not None:
        finished = verification["finished_at"]
        checked = {"id": verification["id"], "verdict": verification["verdict"],
                   "finished_at": finished.isoformat() if finished else None}  # fmt: skip
    return {
        "position": member.position,
        "task_id": member.task.slug,
        "version_hash": member.content_hash,
        "verification": checked,
        "solutions": known,
        "mutants": mutants,
    }
