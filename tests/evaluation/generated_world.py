"""A finished verification whose generated inputs proved a surviving mutant wrong, built
as rows (no sandbox): what the report, the review queue, the API and the export read.

The `generated` part of its summary is made by judgement.survivors_judged from an
explore run's data, and the proposals by proposals_record, as a finishing verification
makes them, so the shapes are the pipeline's own.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from evaluation.models import Execution, ProposedTest, Verification
from evaluation.verification import figures
from evaluation.verification.generated.judgement import survivors_judged
from evaluation.verification.generated.proposals import proposals_record
from tasks_app.models import State
from tasks_app.services import task_submit, task_transition
from tests.factories import make_task

REFERENCE = "def add(a, b):\n    return a + b\n"
# Survives the suite (its hidden tests stay below 100), answers (100, 1) with 99.
WRONG = "def add(a, b):\n    return a + b if a < 100 else a - b\n"
SAME = "def add(a, b):\n    return b + a\n"  # never told apart: probably equivalent
WRONG_ID, SAME_ID = "a" * 64, "b" * 64
GENERATOR = "typed-mutation"


def explore_data(*, seed: int = 7) -> dict[str, Any]:
    """What an explore run sends back for the two survivors."""
    return {
        "generator": GENERATOR,
        "seed": seed,
        "complete": True,
        "captured": 3,
        "generated": 200,
        "valid": 150,
        "invalid": 50,
        "invalid_reasons": {"precondition": 30, "reference_raised": 20},
        "mutants": {
            WRONG_ID: {
                "outcome": "differs",
                "tried": 12,
                "counterexample": {
                    "args": "(100, 1)",
                    "kwargs": "{}",
                    "expected": "101",
                    "got": "99",
                    "shrink_steps": 5,
                },
            },
            SAME_ID: {"outcome": "same", "tried": 150},
        },
    }


def weak_verification(owner: Any, *, slug: str = "add-two", state: str = State.FLAGGED, seed: int = 7) -> Verification:
    """A task in review (`state`) whose latest version's verification killed 2 of 4
    mutants; of the 2 survivors one is proven wrong, one probably equivalent; one
    counterexample test is proposed."""
    task = make_task(owner=owner, slug=slug)
    task_submit(actor=owner, task=task)
    task_transition(actor=None, task=task, to_state=state)
    task.refresh_from_db()
    version = task.latest_version
    score = figures.rate(2, 4).as_dict()
    generated = survivors_judged(status="passed", data=explore_data(seed=seed), survivors=[WRONG_ID, SAME_ID],
                                 mutation_score=score)  # fmt: skip
    summary = {"mutation_score": score, "surviving_mutants": [WRONG_ID, SAME_ID], "generated": generated}
    now = timezone.now()
    verification = Verification.objects.create(
        version=version, config_hash=f"{slug}-{seed}", config={"proposals": 10}, state="done", total=4, done=4,
        summary=summary, verdict="flagged", started_at=now, finished_at=now,
    )  # fmt: skip
    mutants = [(WRONG_ID, "a + b -> a - b past 100", WRONG), (SAME_ID, "a + b -> b + a", SAME),
               ("c" * 64, "a + b -> a * b", "def add(a, b):\n    return a * b\n"),
               ("d" * 64, "a + b -> a", "def add(a, b):\n    return a\n")]  # fmt: skip
    Execution.objects.bulk_create(
        Execution(verification=verification, key=digest, role="mutant", subject=digest, description=description,
                  code=code, solution_digest=digest, status="passed" if digest in (WRONG_ID, SAME_ID) else "failed")
        for digest, description, code in mutants
    )  # fmt: skip
    proposals_record(verification=verification, generated=generated, data=explore_data(seed=seed))
    return verification


def proposals_of(verification: Verification) -> list[ProposedTest]:
    return list(ProposedTest.objects.filter(verification=verification).order_by("id"))
