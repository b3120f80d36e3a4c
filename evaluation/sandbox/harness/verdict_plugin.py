"""The pytest side of a session verdict: run the given tests, hidden ones compiled from
memory, and write one report of what pytest saw to the verdict's pipe.

Loaded before pytest imports anything of the tree (the boot line imports this from
/harness, then takes /harness off sys.path). The tree goes at the end of sys.path and
test directories are appended too (`--import-mode=append`), so no file of the tree can
shadow the standard library, pytest or this plugin.
"""

from __future__ import annotations

import os
import sys

from harness.outcomes import compile_with_rewritten_asserts, note_pytest_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STUB = "# This test file is held in the verdict's memory; this stub anchors its collection.\n"


class Recorder:
    def __init__(self, hidden: dict[str, str], pytest: Any, repo: str, wanted: list[str]) -> None:
        self.wanted = set(wanted)
        self.reports: dict[str, dict[str, Any]] = {}
        self.collect_errors: list[str] = []
        self.finished = False
        sources = {os.path.join(repo, path): source for path, source in hidden.items()}

        class HiddenModule(pytest.Module):
            def _getobj(self) -> Any:
                import types

                source = sources[str(self.path)]
                name = "verdict_hidden_" + os.path.relpath(str(self.path), repo).replace("/", "_").removesuffix(".py")
                module = types.ModuleType(name)
                module.__file__ = str(self.path)
                sys.modules[name] = module
                exec(compile_with_rewritten_asserts(source, str(self.path), self.config), module.__dict__)  # noqa: S102
                return module

        self.sources = sources
        self.module_class = HiddenModule

    def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
        if str(module_path) in self.sources:
            return self.module_class.from_parent(parent, path=module_path)
        return None

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        # The files are collected whole and narrowed to the tests asked for here: a test id
        # pytest cannot find on the command line ends the session before any test runs.
        items[:] = [item for item in items if item.nodeid in self.wanted]

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {str(report.longrepr)[-1500:]}")

    def pytest_runtest_logreport(self, report: Any) -> None:
        entry = self.reports.setdefault(report.nodeid, {"outcome": "passed", "message": "", "called": False})
        note_pytest_report(entry, report)

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self.finished = True


def main(spec_path: str, report_fd: int) -> None:
    from harness import lite

    with open(spec_path, encoding="utf-8") as handle:
        spec = lite.loads(handle.read())
    os.unlink(spec_path)  # before any code of the tree runs: the hidden tests leave the disk
    import _pytest.assertion.rewrite
    import _pytest.python  # noqa: F401
    import pytest

    repo = spec["repo"]
    for path in spec["hidden"]:
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(STUB)
    sys.path.append(repo)
    recorder = Recorder(spec["hidden"], pytest, repo, spec["tests"])
    files = sorted({test.split("::", 1)[0] for test in spec["tests"]})
    files = [path for path in files if os.path.isfile(os.path.join(repo, path))]
    nonce = spec.pop("nonce")
    pytest.main([*files, "-q", "-p", "no:cacheprovider", "--import-mode=append", "--rootdir", repo,
                 "-p", "no:randomly"], plugins=[recorder])  # fmt: skip
    report = {"nonce": nonce, "reports": recorder.reports, "collect_errors": recorder.collect_errors,
              "finished": recorder.finished}  # fmt: skip
    data = lite.dumps(report).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(report_fd, view) :]
    os.close(report_fd)
    sys.stdout.flush()
    os._exit(0)  # no atexit of the tree's code runs after the report
