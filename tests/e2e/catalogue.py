"""The task the journeys author and review: a letter grade from a score.

With only the easy case tested, most mutants of the reference (a changed
boundary, a dropped `return "B"`, ...) still pass; the boundary tests of
KILLING_TESTS kill every one of them (checked against all 23 mutants the
engine makes of it, so the worker's share of 8 is covered whatever its seed).
"""

from __future__ import annotations

from typing import Any

from tests.factories import make_task

GRADE_REFERENCE = """\
def grade(score):
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    return "C"
"""
GRADE_STATEMENT = "Return the letter grade of `score`: A from 90, B from 80, C below."
GRADE_STARTER = "def grade(score):\n    ...\n"
WEAK_VISIBLE = 'assert grade(95) == "A"'
WEAK_HIDDEN = 'assert grade(97) == "A"'
KILLING_TESTS = [
    'assert grade(90) == "A"',
    'assert grade(89) == "B"',
    'assert grade(80) == "B"',
    'assert grade(79) == "C"',
    'assert grade(5) == "C"',
]


def weak_grade_task(*, owner: Any, slug: str, title: str = "Letter grade", tags: tuple[str, ...] = ("grading",)) -> Any:
    """A draft of the grade task with the weak suite, made through the services."""
    return make_task(
        owner=owner,
        slug=slug,
        title=title,
        tags=tags,
        statement=GRADE_STATEMENT,
        entry_point="grade",
        starter_code=GRADE_STARTER,
        visible_tests=[WEAK_VISIBLE],
        hidden_tests=[WEAK_HIDDEN],
        solutions=[{"role": "reference", "label": "ref", "code": GRADE_REFERENCE}],
        time_limit_s=5,
    )
