"""The pytest suite kind, run in the judge's process.

pytest and the test module run here, never in the solution's process: the
test source is compiled from memory (no file holds it), reports are taken
from pytest's own hooks in this process, and `solution` is a proxy module
whose every name is a request to the solution process (plain data, handles
to its objects, look-alikes of its exception classes). The solution cannot
read the tests, forge a report or patch pytest.
"""

from __future__ import annotations

import io
import os
import random
import sys
import types
import uuid

from . import scope, scratch
from .outcomes import (
    OUTCOME_FAILED,
    OUTCOME_PASSED,
    LoadError,
    compile_with_rewritten_asserts,
    note_pytest_report,
)

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Judge

STUB = "# The tests live in the judge's memory; this file only anchors pytest's collection.\n"


def run(judge: Judge) -> None:
    """pytest runs here, in the judge; the candidate only answers requests, as for
    the other kinds. Every collected test must report a call: one that did not, or
    was skipped, is no pass."""
    child = judge.load()
    modules = (judge.tests.get("visible") or []) + (judge.tests.get("hidden") or [])
    setup = judge.tests.get("setup") or ""
    source = "\n\n".join([setup, *modules]) if setup else "\n\n".join(modules)
    plugin = run_pytest_in_judge(judge, child, source, int(judge.run_spec["seed"]), scratch.SCRATCH_FOR_JUDGE)
    if judge.fatal_failure is not None:
        raise judge.fatal_failure
    if plugin.collect_errors:
        judge.load_error = "collection failed:\n" + "\n".join(plugin.collect_errors)
        raise LoadError(judge.load_error)
    for nodeid in plugin.collected:
        entry = plugin.reports.get(nodeid)
        if entry is None or not entry.get("called"):
            outcome = (entry or {}).get("outcome", OUTCOME_FAILED)
            outcome = OUTCOME_FAILED if outcome == OUTCOME_PASSED else outcome
            message = (entry or {}).get("message") or "the test never ran to completion"
            judge.outcomes.append({"name": nodeid, "outcome": outcome, "message": message, "duration_s": 0.0})
        else:
            judge.outcomes.append({"name": nodeid, "outcome": entry["outcome"], "message": entry["message"][:2000],
                                   "duration_s": entry["duration"]})  # fmt: skip
    if not plugin.collected:
        judge.fatal, judge.message = "failed", "no test was collected"
    elif not plugin.finished:
        judge.fatal, judge.message = "failed", "the test session did not finish"


def proxy_module(judge: Any, child: Any) -> types.ModuleType:
    """`solution` as the tests import it: each name a request, but for the modules and
    names the solution imports from the standard library, which are the judge's own."""
    module = types.ModuleType("solution")

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        imported = scope.imported(judge, lambda wanted: wanted == name)
        if name in imported:
            return imported[name]
        return judge.remote(child, {"op": "get", "name": name}, name)

    module.__getattr__ = __getattr__
    return module


class _Plugin:
    def __init__(self, source: str, seed: int, pytest: Any) -> None:
        self.source = source
        self.seed = seed
        self.pytest = pytest
        self.collected: list[str] = []
        self.reports: dict[str, dict[str, Any]] = {}
        self.collect_errors: list[str] = []
        self.finished = False
        source_code = source

        class InMemoryModule(pytest.Module):
            def _getobj(self) -> types.ModuleType:
                module = types.ModuleType("test_suite")
                module.__file__ = str(self.path)
                exec(compile_with_rewritten_asserts(source_code, "test_suite.py", self.config), module.__dict__)  # noqa: S102
                return module

        self.module_class = InMemoryModule

    def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
        return self.module_class.from_parent(parent, path=module_path)

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        random.Random(self.seed).shuffle(items)
        self.collected = [item.nodeid for item in items]

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr)[-2000:])

    def pytest_runtest_logreport(self, report: Any) -> None:
        entry = self.reports.setdefault(report.nodeid, {"outcome": "passed", "message": "", "duration": 0.0})
        entry["duration"] += report.duration
        note_pytest_report(entry, report)

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self.finished = True


def run_pytest_in_judge(judge: Any, child: Any, source: str, seed: int, workdir: str) -> _Plugin:
    """Run the suite with pytest here; return the plugin holding what happened."""
    import pytest

    anchor = os.path.join(workdir, f"judge-{uuid.uuid4().hex[:8]}")
    os.makedirs(anchor, exist_ok=True)
    path = os.path.join(anchor, "test_suite.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(STUB)
    plugin = _Plugin(source, seed, pytest)
    saved_module = sys.modules.get("solution")
    sys.modules["solution"] = proxy_module(judge, child)
    saved_streams = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()  # fd 1 is the host's channel: pytest must not print there
    try:
        pytest.main(
            [path, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--capture=sys",
             "--noconftest", "-c", os.devnull, "--rootdir", anchor, "-o", "python_files=test_suite.py"],
            plugins=[plugin],
        )  # fmt: skip
    finally:
        sys.stdout, sys.stderr = saved_streams
        if saved_module is None:
            sys.modules.pop("solution", None)
        else:
            sys.modules["solution"] = saved_module
    return plugin
