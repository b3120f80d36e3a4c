"""The check_function suite kind (HumanEval's): each test is a module that defines
`check(candidate)`, called with the candidate's entry point; its asserts decide the
test. Run by the assertions kind's loop (suite_assertions.py)."""

from __future__ import annotations

from .outcomes import SuiteProblem
from .remote import proxy
from .suite_assertions import run_tests

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge


def run(judge: Judge) -> None:
    """Each test module defines check(candidate), called with the entry point: it passes
    unless it raises."""
    run_tests(judge, run_test)


def run_test(judge: Judge, test_name: str, source: Any, test_scope: dict[str, Any], names: dict[str, Any],
              child: Child) -> None:  # fmt: skip
    exec(compile(source, f"<{test_name}>", "exec"), test_scope)  # noqa: S102
    check = test_scope.get("check")
    if not callable(check):
        raise SuiteProblem("the test module defines no check(candidate)")
    entry = judge.run_spec.get("entry_point") or ""
    check(names.get(entry) or proxy(judge, child, entry))
