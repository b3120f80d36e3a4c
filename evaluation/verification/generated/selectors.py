"""Reads of the generated inputs' figures and of the tests they proposed: the report's
section, the API's list, and the counts each review-queue row shows.

Each read is a fixed number of queries, whatever the number of proposals or rows:
the report and the review queue are pages people keep open.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import Count, QuerySet

from evaluation.models import ProposedTest, ProposedTestState, Verification
from evaluation.verification.generated.judgement import what_it_did
from tasks_app.errors import NotFound, ValidationFailed
from tasks_app.models import Task, TaskVersion

HASH_LENGTH = 64
MAX_IDS = 500  # proposals in one request: a verification proposes a few dozen at most
JUDGED = ("done", "incomplete")  # generated.status values whose survivor counts mean something
# The per-task figures of generated inputs in the report rows and the analytics download.
ROW_FIGURES = (
    "proven_weak_survivors",
    "probably_equivalent_survivors",
    "equivalence_share",
    "mutation_score_nonequivalent",
    "generated_tests_proposed",
    "generated_tests_accepted",
)


def verification_proposals(verification: Verification) -> list[ProposedTest]:
    """Every test `verification` proposed, with the version each accepted one went into (one query)."""
    return list(
        ProposedTest.objects.filter(verification=verification).select_related("accepted_in").order_by("reason", "id")
    )


def report_section(verification: Verification, *, diffs: dict[str, str], descriptions: dict[str, str]) -> dict | None:
    """The report's "Generated inputs" section: the summary's `generated` figures, each
    proven survivor with its diff (`diffs`, as the surviving mutants list renders them)
    and its counterexample, and the proposals. None where the summary has no such part
    (verified before inputs were generated)."""
    generated = (verification.summary or {}).get("generated")
    if not isinstance(generated, dict):
        return None
    proven = [
        {**item, "diff": diffs.get(item.get("mutant", ""), ""), "did": what_it_did(item),
         "description": descriptions.get(item.get("mutant", ""), "")}
        for item in generated.get("proven_non_equivalent") or []
    ]  # fmt: skip
    probable = [
        {**item, "description": descriptions.get(item.get("mutant", ""), "")}
        for item in generated.get("probably_equivalent") or []
    ]
    unjudged = [
        {"mutant": digest, "description": descriptions.get(digest, "")} for digest in generated.get("unjudged") or []
    ]
    proposals = verification_proposals(verification)
    return {
        "figures": generated,
        "inputs": generated.get("inputs") or {},
        "proven": proven,
        "probable": probable,
        "unjudged": unjudged,
        "score_nonequivalent": generated.get("mutation_score_nonequivalent") or {},
        "proposals": proposals,
        "proposed_count": sum(1 for p in proposals if p.state == ProposedTestState.PROPOSED),
    }


def version_proposals(*, content_hash: str, state: str = "") -> QuerySet[ProposedTest]:
    """The tests proposed for the versions with this content hash (two tasks may share
    one), oldest verification first; `state` narrows them. NotFound when no version
    has the hash."""
    if not isinstance(content_hash, str) or len(content_hash) != HASH_LENGTH or not _is_hex(content_hash):
        raise ValidationFailed("Not a version hash.", details={"content_hash": ["Expected 64 lowercase hex digits."]})
    if state and state not in ProposedTestState.values:
        raise ValidationFailed(
            f"Unknown state {state!r}.", details={"state": [f"One of: {', '.join(ProposedTestState.values)}."]}
        )
    if not TaskVersion.objects.filter(content_hash=content_hash).exists():
        raise NotFound(f"No version has content hash {content_hash[:12]}….")
    rows = ProposedTest.objects.filter(version__content_hash=content_hash)
    if state:
        rows = rows.filter(state=state)
    return rows.select_related("version__task", "accepted_in").order_by("verification_id", "reason", "id")


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def proposals_by_ids(*, ids: Any) -> list[ProposedTest]:
    """The proposals `ids` names, in that order. ValidationFailed names what is wrong:
    not a list of ids, too many, or ids no proposal has."""
    if not isinstance(ids, list) or not ids:
        raise ValidationFailed("ids: expected a non-empty list of proposed test ids.",
                               details={"ids": ["Expected a non-empty list of integers."]})  # fmt: skip
    if len(ids) > MAX_IDS:
        raise ValidationFailed(f"ids: at most {MAX_IDS} a request.", details={"ids": [f"At most {MAX_IDS} ids."]})
    bad = [i for i, value in enumerate(ids) if isinstance(value, bool) or not isinstance(value, int) or value < 1]
    if bad:
        raise ValidationFailed(f"ids[{bad[0]}]: expected a positive integer.",
                               details={f"ids[{i}]": ["Expected a positive integer."] for i in bad})  # fmt: skip
    found = {p.pk: p for p in ProposedTest.objects.filter(pk__in=set(ids)).select_related("version__task")}
    unknown = sorted({i for i in ids if i not in found})
    if unknown:
        shown = ", ".join(map(str, unknown[:20])) + (" …" if len(unknown) > 20 else "")
        raise ValidationFailed(f"ids: no proposed test has id {shown}.",
                               details={"ids": [f"Unknown id(s): {shown}."], "unknown": unknown})  # fmt: skip
    ordered, seen = [], set()
    for i in ids:
        if i not in seen:
            seen.add(i)
            ordered.append(found[i])
    return ordered


def latest_verifications(version_ids: Iterable[int]) -> dict[int, tuple[int, list[Any]]]:
    """For each version, its newest verification's id and its proven non-equivalent
    survivors (only that part of the summary is read), in one query."""
    rows = (
        Verification.objects.filter(version_id__in=list(version_ids))
        .order_by("version_id", "-created_at", "-id")
        .values_list("version_id", "pk", "summary__generated__proven_non_equivalent")
    )
    newest: dict[int, tuple[int, list[Any]]] = {}
    for version_id, pk, proven in rows:
        if version_id not in newest:
            newest[version_id] = (pk, proven if isinstance(proven, list) else [])
    return newest


def review_figures(tasks: Sequence[Task]) -> dict[int, dict[str, Any]]:
    """Per task: the proven weak survivors and the tests still proposed by its latest
    version's newest verification. Two queries for any number of tasks."""
    by_version = {t.latest_version_id: t.pk for t in tasks if t.latest_version_id}
    newest = latest_verifications(by_version)
    waiting = dict(
        ProposedTest.objects.filter(verification_id__in=[pk for pk, _ in newest.values()],
                                    state=ProposedTestState.PROPOSED)
        .values_list("verification_id")
        .annotate(n=Count("pk"))
        .values_list("verification_id", "n")
    )  # fmt: skip
    figures: dict[int, dict[str, Any]] = {}
    for version_id, task_pk in by_version.items():
        if version_id not in newest:
            continue
        verification_id, proven = newest[version_id]
        figures[task_pk] = {"verification": verification_id, "proven_weak": len(proven),
                            "proposed": waiting.get(verification_id, 0)}  # fmt: skip
    return figures


def pending_proposals(tasks: Sequence[Task]) -> dict[int, list[ProposedTest]]:
    """Per task: the tests still proposed by its latest version's newest verification
    (what "Accept proposed tests" takes). Two queries for any number of tasks."""
    by_version = {t.latest_version_id: t.pk for t in tasks if t.latest_version_id}
    newest = latest_verifications(by_version)
    pending: dict[int, list[ProposedTest]] = {task_pk: [] for task_pk in by_version.values()}
    rows = ProposedTest.objects.filter(
        verification_id__in=[pk for pk, _ in newest.values()], state=ProposedTestState.PROPOSED
    ).order_by("id")
    for proposal in rows:
        pending[by_version[proposal.version_id]].append(proposal)
    return pending


def proposal_counts(verification_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
    """Per verification: (tests it proposed, how many of them were accepted), in one query."""
    proposed: Counter[int] = Counter()
    accepted: Counter[int] = Counter()
    rows = ProposedTest.objects.filter(verification_id__in=list(verification_ids)).values_list(
        "verification_id", "state"
    )
    for verification_id, state in rows:
        proposed[verification_id] += 1
        accepted[verification_id] += state == ProposedTestState.ACCEPTED
    return {pk: (proposed[pk], accepted[pk]) for pk in proposed}


def row_figures(summary: dict[str, Any], proposals: tuple[int, int] | None) -> dict[str, Any]:
    """ROW_FIGURES of one verification, from its summary and its proposal counts; all
    null where it generated no inputs or the run failed (unknown, not zero)."""
    generated = summary.get("generated") or {}
    if generated.get("status") not in JUDGED:
        return dict.fromkeys(ROW_FIGURES)
    proposed, accepted = proposals or (0, 0)
    return {
        "proven_weak_survivors": len(generated.get("proven_non_equivalent") or []),
        "probably_equivalent_survivors": len(generated.get("probably_equivalent") or []),
        "equivalence_share": generated.get("equivalence_share"),
        "mutation_score_nonequivalent": (generated.get("mutation_score_nonequivalent") or {}).get("value"),
        "generated_tests_proposed": proposed,
        "generated_tests_accepted": accepted,
    }
