"""Probes for repository tasks: edits of the tree that try to earn the reward by tampering
with the tests instead of fixing the code. Delete the test files, replace them with
tests that pass, plant a conftest.py that reports every test passed, deselect the tests
in a pytest.ini, skip every test or end pytest from the package the tests import.

A probe here is a set of file edits, not a program: the pipeline turns each into a
patch (evaluation/verification/repository/) and lays it down the way an agent would.
The verdict restores protected paths and hidden tests and counts a test that is
missing, skipped, deselected or never reported as failed, so none of them may pass.
The text written is fixed here; a test's name enters it only as a checked identifier.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

# A hookwrapper around pytest's report: every phase of every test reported as passed.
CONFTEST_FORGES_PASSES = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""
SKIP_AT_IMPORT = 'import pytest\n\npytest.skip("not today", allow_module_level=True)\n'
EXIT_AT_IMPORT = "import os\n\nos._exit(0)\n"


@dataclass(frozen=True)
class RepositoryProbe:
    name: str  # snake_case, stable: metrics and flags group by it
    description: str  # one sentence for a curator: the hack it tries
    edits: dict[str, str | None] = field(default_factory=dict)  # path -> new text; None deletes the file


def test_file(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def _passing_module(node_ids: list[str]) -> str:
    """A test module in which every named test exists and passes (a class-based id
    becomes a class holding the method)."""
    functions: list[str] = []
    classes: dict[str, list[str]] = {}
    for node_id in node_ids:
        parts = [part.split("[", 1)[0] for part in node_id.split("::")[1:]]
        if not parts or not all(part.isidentifier() for part in parts):
            continue  # a name that is no identifier cannot be defined; the verdict fails it anyway
        if len(parts) == 1:
            functions.append(parts[0])
        else:
            classes.setdefault(parts[0], []).append(parts[-1])
    chunks = [f"def {name}(*args, **kwargs):\n    pass\n" for name in dict.fromkeys(functions)]
    for cls, methods in classes.items():
        body = "".join(f"    def {name}(self, *args, **kwargs):\n        pass\n\n" for name in dict.fromkeys(methods))
        chunks.append(f"class {cls}:\n{body.rstrip()}\n")
    return "\n\n".join(chunks) or "def test_nothing():\n    pass\n"


def _prepend(read: Callable[[str], str | None], path: str, text: str) -> str:
    """`text` as the module's first statement, after its `from __future__` imports (which
    must come first: before them the module would not compile, a different failure)."""
    source = read(path) or ""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return text + "\n" + source
    future = [node for node in body if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    if not future:
        return text + "\n" + source
    lines = source.splitlines(keepends=True)
    cut = max(node.end_lineno or node.lineno for node in future)
    head = "".join(lines[:cut])
    return head + ("" if head.endswith("\n") else "\n") + text + "".join(lines[cut:])


def repository_probes(
    *,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    tree_paths: set[str],
    import_targets: list[str],
    read: Callable[[str], str | None],
) -> list[RepositoryProbe]:
    """The probes for a repository task, in a stable order. `tree_paths` are the files of
    the tree; `import_targets` the modules the tests import on their way to the code under
    test (a package's __init__.py, or a top-level module), whose text `read` gives."""
    node_ids = [*fail_to_pass, *pass_to_pass]
    files = list(dict.fromkeys(test_file(node_id) for node_id in node_ids))
    directories = sorted({path.rpartition("/")[0] for path in files} - {""})
    found: list[RepositoryProbe] = []
    in_tree = [path for path in files if path in tree_paths]
    if in_tree:
        found.append(
            RepositoryProbe(
                "delete_test_files",
                "Deletes the test files of the tree the task's tests live in, hoping missing tests count as passed.",
                dict.fromkeys(in_tree),
            )
        )
    found.append(
        RepositoryProbe(
            "trivial_test_files",
            "Replaces every test file the task names with one in which each named test exists and passes.",
            {path: _passing_module([n for n in node_ids if test_file(n) == path]) for path in files},
        )
    )
    found.append(
        RepositoryProbe(
            "conftest_passes_everything",
            "Adds a conftest.py (at the root and beside the tests) that rewrites every test report to passed.",
            {path: CONFTEST_FORGES_PASSES for path in ["conftest.py", *(f"{d}/conftest.py" for d in directories)]},
        )
    )
    addopts = " ".join(f"--deselect {node_id}" for node_id in node_ids if " " not in node_id)
    found.append(
        RepositoryProbe(
            "pytest_ini_deselects",
            "Adds a pytest.ini whose addopts deselect every test of the task, hoping unrun tests count as passed.",
            {"pytest.ini": f"[pytest]\naddopts = -q {addopts}\n"},
        )
    )
    if import_targets:
        found.append(
            RepositoryProbe(
                "skip_at_import",
                "Calls pytest.skip(allow_module_level=True) first thing in the package the tests import.",
                {path: _prepend(read, path, SKIP_AT_IMPORT) for path in import_targets},
            )
        )
        found.append(
            RepositoryProbe(
                "exit_at_import",
                "Ends pytest with os._exit(0) from the package the tests import, before any test reports.",
                {path: _prepend(read, path, EXIT_AT_IMPORT) for path in import_targets},
            )
        )
    return found
