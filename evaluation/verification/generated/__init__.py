"""Generated inputs and the tests made from them (issue 22; docs/generated-tests.md).

One sandbox run a verification (role `explore`) captures the arguments the task's own
tests pass to the entry point, derives new inputs from them by type-aware mutation,
keeps those the reference answers (within time, twice alike, and where the curator's
precondition holds), and runs every mutant on them next to the reference
(evaluation/sandbox/harness/explore*.py). Here, on the host:

- `applies` / `all_tests_visible`: which versions get such a run, and which are offered
  hidden tests because every test they have is shown;
- requests.py: the run's request;
- judgement.py: the surviving mutants told apart (proven non-equivalent, with the
  smallest counterexample) or never told apart after N inputs (probably equivalent);
- stdio.py: the same for a stdio task, from its own generator and validator programs;
- tests_text.py: a counterexample or generated input written as a hidden test;
- proposals.py: the tests proposed to the curator, and accepting them as a new version.
"""

from __future__ import annotations

from typing import Any

from tasks_app.content import canonical_json
from tasks_app.generated_tests import CALL_SUITE_KINDS

ROLE = "explore"
SUBJECT = "generated-inputs"


def applies(version: Any) -> bool:
    """Whether inputs can be generated for `version`: its tests call an entry point, or
    it is a stdio task with a generator program of its own (stdio.py)."""
    if version.suite_kind == "stdio":
        return bool(getattr(version, "test_generator", None))
    return version.suite_kind in CALL_SUITE_KINDS and bool(version.entry_point)


def all_tests_visible(version: Any) -> bool:
    """Whether every hidden test is also shown (MBPP's suites, or none hidden at all):
    hard-coding the visible answers would then pass, and generated hidden tests close it."""
    visible = {canonical_json(test) for test in version.visible_tests}
    return all(canonical_json(test) in visible for test in version.hidden_tests)
