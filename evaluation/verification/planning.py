"""Planning a version's verification: the executions its configuration asks for, made
once, and the order in which they run.

Idempotent: an unchanged version under an unchanged configuration is the same
verification, found by its key, and each execution is found by its own key (version
hash, solution digest, repeat, configuration), so a redelivered or repeated plan
makes nothing twice and runs only what is left.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.models import Execution, Flag, Verification, VerificationState
from evaluation.sandbox.types import SETTLED
from evaluation.verification import generated, mutants, probes
from evaluation.verification.config import VerifyConfig, code_digest, execution_key
from evaluation.verification.repository import execution_time_limit_s, is_repository
from evaluation.verification.repository.planning import repository_items
from tasks_app.models import TaskVersion


def _planned(version: TaskVersion, config: VerifyConfig) -> list[dict[str, Any]]:
    """Every execution the configuration asks for, in a stable order (a repository
    task's are patches, each run as a session: repository/planning.py)."""
    if is_repository(version):
        return repository_items(version, config)
    solutions = list(version.solutions.all().order_by("role", "label"))
    items: list[dict[str, Any]] = []
    for solution in solutions:
        for repeat in range(config.repeats):
            items.append(
                {
                    "role": solution.role,
                    "subject": solution.label,
                    "description": solution.note[:300],
                    "code": solution.code,
                    "repeat": repeat,
                    "seed": repeat,
                }
            )
    references = [s for s in solutions if s.role == "reference"]
    # Python's references are mutated on their tree, every other language's on its
    # tokens (mutants/tokens.py). Probes are each language's own (probes/language_hacks.py).
    language = version.language or "python"
    if references and config.mutants and (language == "python" or language in mutants.TOKEN_LANGUAGES):
        reference = references[0].code
        found = (
            mutants.generate_mutants(reference, seed=config.mutation_seed, limit=config.mutants)
            if language == "python"
            else mutants.generate_token_mutants(
                reference, language=language, seed=config.mutation_seed, limit=config.mutants
            )
        )
        for mutant in found:
            items.append(
                {
                    "role": "mutant",
                    "subject": mutant.digest,
                    "description": mutant.description[:300],
                    "code": mutant.source,
                    "repeat": 0,
                    "seed": 0,
                }
            )
    if config.probes:
        found = probes.probes_for(
            suite_kind=version.suite_kind,
            entry_point=version.entry_point,
            visible_tests=list(version.visible_tests),
            statement=version.statement,
            starter_code=version.starter_code,
            language=language,
            signature=dict(getattr(version, "signature", None) or {}),
        )
        for probe in found:
            items.append(
                {
                    "role": "probe",
                    "subject": probe.name,
                    "description": probe.description[:300],
                    "code": probe.code,
                    "repeat": 0,
                    "seed": 0,
                }
            )
    if references and config.inputs and generated.applies(version):
        items.append(
            {
                "role": generated.ROLE,
                "subject": generated.SUBJECT,
                "description": _generation_description(version, config.inputs),
                "code": references[0].code,
                "repeat": 0,
                "seed": config.input_seed,
                # Not the reference's digest: its first run has the same code and repeat.
                "solution_digest": code_digest(f"{generated.ROLE}\n{references[0].code}"),
            }
        )
    return items


def _generation_description(version: TaskVersion, inputs: int) -> str:
    if version.suite_kind == "stdio":
        count = int((version.test_generator or {}).get("count") or 20)
        return f"{count} inputs from the task's generator; every mutant and wrong solution run on them"
    return f"{inputs} generated inputs; every mutant judged on them next to the reference"


def verification_plan(
    *, version: TaskVersion, config: VerifyConfig | None = None, requested_by: Any = None, force: bool = False
) -> tuple[Verification, list[int]]:
    """The verification of `version` under `config` and the ids of the executions
    still to run. An unchanged version under an unchanged configuration is the
    same verification: once done it runs nothing (unless `force`)."""
    config = config or VerifyConfig.from_settings()
    config_hash = config.hash()
    verification = Verification.objects.filter(version=version, config_hash=config_hash).first()
    if verification is None:
        try:
            with transaction.atomic():
                verification = Verification.objects.create(
                    version=version, config_hash=config_hash, config=config.canonical(), requested_by=requested_by
                )
        except IntegrityError:  # planned at the same moment elsewhere
            verification = Verification.objects.get(version=version, config_hash=config_hash)
    if verification.state == VerificationState.DONE and not force:
        return verification, []
    rows = [
        Execution(
            verification=verification,
            key=execution_key(
                version_hash=version.content_hash,
                solution_digest=item["solution_digest"],
                repeat=item["repeat"],
                config_hash=config_hash,
            ),
            **item,
        )
        for item in ({"solution_digest": code_digest(i["code"]), **i} for i in _planned(version, config))
    ]
    Execution.objects.bulk_create(rows, ignore_conflicts=True)  # the key makes a replan a no-op
    if force:
        verification.executions.update(status="pending", result=None, started_at=None, finished_at=None)
        Flag.objects.filter(verification=verification).delete()
    total = verification.executions.count()
    deadline = timezone.now() + timedelta(seconds=verification_deadline_s(version, total))
    Verification.objects.filter(pk=verification.pk).update(
        total=total,
        state=VerificationState.RUNNING,
        started_at=timezone.now(),
        deadline_at=deadline,
        finished_at=None,
        **({"verdict": "", "summary": None, "done": 0} if force else {}),
    )
    verification.refresh_from_db()
    return verification, verification_todo(verification)


# References run first: a mutant's wall-time cap is ten times the reference's
# slowest run, which must be known by then. Probes before mutants: a hack is the
# most important thing a verification can find.
# Input generation last: it judges mutants, and the wait for it is the longest.
RUN_ORDER = {"reference": 0, "adversarial": 1, "probe": 2, "mutant": 3, "explore": 4}


def verification_todo(verification: Verification) -> list[int]:
    """Its executions still to run (pending, claimed by a dead worker, or failed by
    the sandbox), in RUN_ORDER."""
    rows = verification.executions.exclude(status__in=SETTLED).values_list("role", "pk")
    return [pk for _, pk in sorted(rows, key=lambda row: (RUN_ORDER[row[0]], row[1]))]


def verification_deadline_s(version: TaskVersion, total: int) -> float:
    """Long enough for every execution to run one after another, with room to spare."""
    return 600.0 + total * (execution_time_limit_s(version) + 5.0)
