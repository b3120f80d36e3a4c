"""Tests proposed from generated inputs, and accepting them as a new version.

A verification proposes, once, when it finishes:
- a counterexample test for each proven non-equivalent survivor: the shrunk input and
  the reference's answer, which that mutant gets wrong;
- for a suite whose every test is shown (all_tests_visible), hidden tests from the
  generated inputs the run chose for their varied answers, never one of the inputs
  the visible tests already show and never one whose answer is the first visible
  answer (what a table of the visible answers falls back on), so hard-coding the
  visible examples fails them.

Accepting writes a new version of the task with the tests appended to its hidden tests
and recorded in its `generated_tests` (generator, seed, reason, mutant, the version
that proposed them), then submits it, so its own verification runs: a test the
reference fails there shows as REFERENCE_FAILS before anyone approves it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluation.models import Execution, ProposedTest, ProposedTestReason, ProposedTestState, Verification
from evaluation.verification.generated import all_tests_visible, applies
from evaluation.verification.generated.judgement import what_it_did
from evaluation.verification.generated.tests_text import NotATest, hidden_test, literal
from evaluation.verification.probes.examples import visible_examples
from tasks_app.content import VersionContent, canonical_json
from tasks_app.errors import Conflict, DomainError
from tasks_app.models import State, Task, TaskVersion
from tasks_app.services import task_submit, task_version_create


def _digest(test: Any) -> str:
    return hashlib.sha256(canonical_json(test).encode()).hexdigest()


def _visible_default(version: TaskVersion) -> tuple[set[str], Any, bool]:
    """The visible examples' argument sources, and the first visible answer (the
    hard_code_visible probe's fallback), if there is one."""
    try:
        examples = visible_examples(suite_kind=version.suite_kind, entry_point=version.entry_point,
                                    visible_tests=list(version.visible_tests), statement=version.statement)  # fmt: skip
    except Exception:
        examples = []
    shown = {repr(tuple(args)) for args, _kwargs, _want in examples}
    return shown, (examples[0][2] if examples else None), bool(examples)


def proposals_record(*, verification: Verification, generated: dict[str, Any], data: dict[str, Any] | None) -> int:
    """Store the tests this finished verification proposes (idempotent: a test is
    stored once per verification). Returns how many it stored now."""
    version = verification.version
    if not applies(version) or not isinstance(data, dict):
        return 0
    generator, seed = str(data.get("generator") or ""), int(data.get("seed") or 0)
    descriptions = dict(verification.executions.filter(role="mutant").values_list("subject", "description"))
    rows: list[ProposedTest] = []
    seen: set[str] = set()

    def add(reason: str, example: dict[str, Any], note: str, mutant: str = "", got: str = "") -> bool:
        try:
            if version.suite_kind == "stdio":  # an input and the reference's output: a stdio case as it is
                test: Any = {"input": str(example["args"]), "output": str(example["expected"])}
            else:
                test = hidden_test(suite_kind=version.suite_kind, entry_point=version.entry_point,
                                   args=example["args"], kwargs=example.get("kwargs") or "{}",
                                   expected=example["expected"], note=note)  # fmt: skip
        except (NotATest, KeyError, TypeError):
            return False
        digest = _digest(test)
        if digest in seen or test in version.hidden_tests:
            return False
        seen.add(digest)
        rows.append(ProposedTest(verification=verification, version=version, reason=reason, mutant_digest=mutant,
                                 mutant_description=descriptions.get(mutant, "")[:300], args=example["args"],
                                 kwargs=example.get("kwargs") or "{}", expected=example["expected"], got=got[:2000],
                                 test=test, digest=digest, generator=generator, seed=seed))  # fmt: skip
        return True

    for proven in generated.get("proven_non_equivalent") or []:
        note = f"generated ({generator}, seed {seed}): mutant {proven['mutant'][:12]} {what_it_did(proven, 80)}"
        # The mutant's own value where it returned one; else what happened instead.
        plain = proven.get("got") is not None and not (proven.get("timed_out") or proven.get("raised"))
        got = str(proven["got"]) if plain else what_it_did(proven, 2000)
        add(ProposedTestReason.COUNTEREXAMPLE, proven, note, mutant=proven["mutant"], got=got)
    escaped = set(verification.executions.filter(role="adversarial", status="passed").values_list("subject", flat=True))
    caught = [(label, v) for label, v in (data.get("wrong_solutions") or {}).items()
              if v.get("outcome") == "differs" and label in escaped]  # fmt: skip
    for label, verdict in caught:  # a wrong solution the suite passes and a generated input catches
        example = verdict.get("counterexample") or {}
        note = f"generated ({generator}, seed {seed}): catches the wrong solution {label!r}"
        descriptions[f"wrong:{label}"] = f"wrong solution {label!r}"
        add(ProposedTestReason.COUNTEREXAMPLE, example, note, mutant=f"wrong:{label}"[:64],
            got=str(example.get("got") or ""))  # fmt: skip
    if version.suite_kind != "stdio" and all_tests_visible(version):
        wanted = int((verification.config or {}).get("proposals", 10))
        shown, default, has_default = _visible_default(version)
        offered = [p for p in data.get("proposals") or [] if isinstance(p, dict) and p.get("args") not in shown]
        # First those the fallback answer gets wrong: each is a test hard-coding fails.
        offered.sort(key=lambda p: _answers(p, default, has_default))
        made = 0
        for proposal in offered:
            if made >= wanted:
                break
            kills = ", ".join(str(k)[:12] for k in proposal.get("kills") or [])
            note = f"generated ({generator}, seed {seed}): hidden test for an all-visible suite" + (
                f"; tells apart mutant(s) {kills}" if kills else ""
            )
            made += add(ProposedTestReason.HIDDEN_FOR_VISIBLE, proposal, note)
    ProposedTest.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _answers(proposal: dict[str, Any], default: Any, has_default: bool) -> bool:
    """Whether the hard-coding fallback would answer this input right (sorted last)."""
    if not has_default:
        return False
    try:
        return literal(str(proposal.get("expected")), "expected answer") == default
    except NotATest:
        return True


@dataclass
class AcceptResult:
    versions: list[TaskVersion] = field(default_factory=list)
    accepted: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {task, reason}


def proposed_tests_accept(*, actor: Any, proposals: Iterable[ProposedTest], submit: bool = True) -> AcceptResult:
    """A new version per task with its chosen proposals added as hidden tests.

    Steps, per task, in one transaction each: refuse proposals made for a version that
    is no longer the task's newest (its tests may have moved on); append each test not
    already there to the newest version's hidden tests, recording it in generated_tests;
    save the version (task_version_create: draft); mark the proposals accepted; submit
    the task, so the new version is verified at once."""
    by_version: dict[int, list[ProposedTest]] = defaultdict(list)
    for proposal in proposals:
        by_version[proposal.version_id].append(proposal)
    result = AcceptResult()
    for version_id, chosen in by_version.items():
        version = TaskVersion.objects.select_related("task").get(pk=version_id)
        task = version.task
        pending = [p for p in chosen if p.state == ProposedTestState.PROPOSED]
        if not pending:
            result.skipped.append({"task": task.slug, "reason": "already accepted or dismissed"})
            continue
        try:
            with transaction.atomic():
                made = _accept_for_task(actor=actor, task=task, version=version, proposals=pending)
        except DomainError as exc:
            result.skipped.append({"task": task.slug, "reason": exc.message})
            continue
        result.versions.append(made)
        result.accepted += len(pending)
        if submit:
            _submit(actor, task)
    return result


def _accept_for_task(*, actor: Any, task: Task, version: TaskVersion, proposals: list[ProposedTest]) -> TaskVersion:
    task = Task.objects.select_for_update().get(pk=task.pk)
    if task.latest_version_id != version.pk:
        raise Conflict(
            f"These tests were proposed for v{version.number}, but the task's newest version is "
            f"v{task.latest_version.number}: verify the newest version for proposals of its own.",
            details={"version": version.number, "latest": task.latest_version.number},
        )
    claimed = ProposedTest.objects.filter(pk__in=[p.pk for p in proposals], state=ProposedTestState.PROPOSED)
    if claimed.count() != len(proposals):
        raise Conflict("Some of these tests were accepted or dismissed meanwhile: reload and choose again.")
    content = VersionContent.from_version(version)
    hidden, generated = list(content.hidden_tests), list(content.generated_tests)
    for proposal in sorted(proposals, key=lambda p: p.pk):
        if proposal.test in hidden:
            continue
        hidden.append(proposal.test)
        generated.append({"hidden_index": len(hidden) - 1, "generator": proposal.generator, "seed": proposal.seed,
                          "reason": proposal.reason, "mutant": proposal.mutant_digest,
                          "from_version": version.content_hash})  # fmt: skip
    content = replace(content, hidden_tests=hidden, generated_tests=generated)
    count = len(proposals)
    made = task_version_create(
        actor=actor, task=task, content=content, base_number=version.number,
        changelog=f"Added {count} generated hidden test{'s' if count != 1 else ''} proposed by the verification "
        f"of v{version.number}.",
    ).version  # fmt: skip
    claimed.update(state=ProposedTestState.ACCEPTED, accepted_in=made, decided_by=actor, decided_at=timezone.now())
    return made


def _submit(actor: Any, task: Task) -> None:
    task.refresh_from_db()
    if task.state == State.DRAFT:
        try:
            task_submit(actor=actor, task=task, note="Submitted with accepted generated tests.")
        except DomainError:
            pass  # left a draft: the curator submits it by hand, and the page says it is a draft


def proposed_tests_dismiss(*, actor: Any, proposals: Iterable[ProposedTest]) -> int:
    """Mark proposals dismissed (a curator judged the input out of the task's domain)."""
    ids = [p.pk for p in proposals]
    return ProposedTest.objects.filter(pk__in=ids, state=ProposedTestState.PROPOSED).update(
        state=ProposedTestState.DISMISSED, decided_by=actor, decided_at=timezone.now()
    )


def explore_execution(verification: Verification) -> Execution | None:
    return verification.executions.filter(role="explore").first()
