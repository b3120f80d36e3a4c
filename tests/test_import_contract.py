"""The import contract (pyproject.toml, [tool.importlinter]) and what it cannot say.

`lint-imports` checks the layers, the sandbox room's independence from the web stack
and the absence of cycles; it runs in `make test` before pytest, and here too, so a
plain `pytest` run enforces it as well. import-linter cannot say "the standard
library and nothing else", which the in-sandbox harness needs (a sandbox has no
site-packages), so that rule is checked below from the harness's own source.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "evaluation" / "sandbox" / "harness"
# The pytest suite kind runs the tests with the sandbox's own pytest (Debian's
# python3-pytest, on the sandbox's dist-packages): the one import beyond the standard
# library, made only when a pytest suite runs or is warmed for.
PYTEST_KIND = {"pytest", "_pytest"}


def _imported_top_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_harness_imports_only_the_standard_library_and_itself():
    modules = sorted(HARNESS.glob("*.py"))
    assert len(modules) > 5, f"the harness moved: no modules under {HARNESS}"
    foreign = {}
    for path in modules:
        outside = _imported_top_names(path) - set(sys.stdlib_module_names) - {"harness"} - PYTEST_KIND
        if outside:
            foreign[path.name] = sorted(outside)
    assert not foreign, f"harness modules import beyond the standard library: {foreign}"


def test_the_contract_names_every_rule_the_architecture_page_promises():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    kinds = sorted(contract["type"] for contract in config["contracts"])
    assert kinds == ["acyclic_siblings", "forbidden", "layers", "layers"], kinds
    forbidden = next(c for c in config["contracts"] if c["type"] == "forbidden")
    assert forbidden["source_modules"] == ["evaluation.sandbox"]
    assert {"django", "rest_framework", "celery", "tasks_app", "trainer_bridge"} <= set(forbidden["forbidden_modules"])


def test_the_import_contract_is_kept():
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
