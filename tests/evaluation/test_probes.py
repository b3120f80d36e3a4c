"""Exploit probes: generic reward hacks adapted to a task, and proof that the
sandbox harness rejects every one of them on the sample catalogue.

Probe code is only ever compiled here, never executed: it runs in a bwrap
sandbox through `engine.run` or not at all."""

from __future__ import annotations

import ast
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import Status
from evaluation.verification import config
from evaluation.verification.probes import STDIO_INAPPLICABLE, TIMEOUT_PROBES, given_helpers, probes_for, render
from tasks_app.catalogue import catalogue_load
from tasks_app.models import TaskVersion
from tests.evaluation.conftest import needs_bwrap

SUITES = {
    "assertions": ("add", ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]),
    "check_function": (
        "add",
        ["def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(a=2, b=5) == 7\n"],
    ),
    "pytest": ("add", ["from solution import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n"]),
    "stdio": ("", [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}]),
}
# The hacks every function kind must be probed with (the brief's list), and those that apply to programs.
CALL_HACKS = {
    "exit_at_import",
    "os_exit_at_import",
    "sys_exit_in_call",
    "os_exit_in_call",
    "always_equal_object",
    "always_equal_builtin_subclass",
    "raise_skip_test",
    "pytest_skip_in_call",
    "conftest_report_patch",
    "sitecustomize_and_pth",
    "fake_pass_output",
    "read_test_files",
    "stack_frame_locals",
    "gc_scan_expected",
    "return_first_argument",
    "hard_code_visible",
    "sleep_past_limit",
    "patch_builtins_at_import",
}
STDIO_HACKS = {"exit_at_import", "fake_pass_output", "echo_input", "hard_code_visible", "sleep_past_limit"}
# Each sandboxed probe run is held to this, whatever the task allows, so stalling probes end quickly.
CAP_S = 3.0


def probes(kind: str, **overrides):
    entry_point, visible = SUITES[kind]
    arguments = {"suite_kind": kind, "entry_point": entry_point, "visible_tests": visible, **overrides}
    return probes_for(**arguments)


def assigned_literal(code: str, name: str):
    """The literal a generated module assigns to `name`, read without running it."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no literal assignment to {name} in:\n{code}")


def by_name(kind: str, name: str, **overrides):
    return next(p for p in probes(kind, **overrides) if p.name == name)


@pytest.mark.parametrize("kind", SUITES)
def test_every_kind_gets_enough_probes_with_unique_names_that_compile(kind):
    found = probes(kind)
    # stdio gets fewer: STDIO_INAPPLICABLE lists the hacks a program has no way to try.
    assert len(found) >= (12 if kind == "stdio" else 14)
    names = [p.name for p in found]
    assert len(set(names)) == len(names)
    for probe in found:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", probe.name), probe.name
        assert probe.description.endswith(".") and "\n" not in probe.description, probe.name
        compile(probe.code, "probe.py", "exec")  # compiling only: probe code never runs outside a sandbox


def test_function_kinds_are_probed_with_every_required_hack():
    for kind in ("assertions", "check_function", "pytest"):
        assert {p.name for p in probes(kind)} >= CALL_HACKS


def test_programs_are_probed_with_the_hacks_that_apply_to_them():
    names = {p.name for p in probes("stdio")}
    assert names >= STDIO_HACKS
    assert not names & set(STDIO_INAPPLICABLE)


@pytest.mark.parametrize("kind", ["assertions", "check_function", "pytest"])
def test_function_probes_define_the_entry_point_taking_any_arguments(kind):
    for probe in probes(kind, entry_point="solve_it"):
        defined = [n for n in ast.parse(probe.code).body if isinstance(n, ast.FunctionDef) and n.name == "solve_it"]
        assert len(defined) == 1, probe.name
        assert defined[0].args.vararg is not None and defined[0].args.kwarg is not None, probe.name


def test_the_probes_follow_the_tasks_names_and_examples():
    first = {p.name: p.code for p in probes("assertions", entry_point="add")}
    second = {p.name: p.code for p in probes("assertions", entry_point="plus", visible_tests=["assert plus(2) == 'x'"])}
    assert first.keys() == second.keys()
    assert all(first[name] != second[name] for name in first)


def test_the_hard_coding_probe_holds_the_visible_assertions_and_the_statements_examples():
    statement = "Add two numbers.\n\n```python\n>>> add(10, 20)   # thirty\n30\n```\n"
    code = by_name("assertions", "hard_code_visible", statement=statement).code
    assert assigned_literal(code, "_EXAMPLES") == [((1, 2), {}, 3), ((-1, 1), {}, 0), ((10, 20), {}, 30)]


def test_the_hard_coding_probe_reads_check_functions_and_pytest_modules():
    check = assigned_literal(by_name("check_function", "hard_code_visible").code, "_EXAMPLES")
    assert check == [((1, 2), {}, 3), ((), {"a": 2, "b": 5}, 7)]
    assert assigned_literal(by_name("pytest", "hard_code_visible").code, "_EXAMPLES") == [((1, 2), {}, 3)]


def test_the_hard_coding_probe_maps_visible_inputs_to_outputs_for_programs():
    code = by_name("stdio", "hard_code_visible").code
    assert "{'1 2\\n': '3\\n', '5 5\\n': '10\\n'}" in code


def test_task_text_reaches_probe_code_only_as_literals():
    hostile = "x'''\nimport os; os.system('boom')\n\"\"\""
    assertions = [f"assert add({hostile!r}) == {hostile!r}"]
    code = by_name("assertions", "hard_code_visible", visible_tests=assertions).code
    assert assigned_literal(code, "_EXAMPLES") == [((hostile,), {}, hostile)]
    found = probes("assertions", visible_tests=assertions, statement=f">>> add({hostile!r})\n{hostile!r}\n")
    found += probes("stdio", visible_tests=[{"input": hostile, "output": hostile}])
    for probe in found:
        # The text sits in string constants only: no probe of ours calls os.system.
        calls = [n for n in ast.walk(ast.parse(probe.code)) if isinstance(n, ast.Attribute) and n.attr == "system"]
        assert calls == [], probe.name


def test_an_unknown_kind_or_an_entry_point_that_is_no_identifier_is_refused():
    with pytest.raises(ValueError, match="suite kind"):
        probes_for(suite_kind="doctest", entry_point="add", visible_tests=[])
    for bad in ("", "class", "add(); import os", "a b"):
        with pytest.raises(ValueError, match="identifier"):
            probes_for(suite_kind="assertions", entry_point=bad, visible_tests=[])


@needs_bwrap
@pytest.mark.slow
@pytest.mark.django_db
def test_no_probe_passes_on_any_catalogue_task(bwrap_pool, curator, reviewer):
    catalogue_load(owner=curator, reviewer=reviewer)
    versions = list(TaskVersion.objects.select_related("task").order_by("task__slug", "number"))
    # A stalled probe costs the whole cap: stall on one task of each kind, not on every task.
    stall_on = {}
    for version in versions:
        stall_on.setdefault(version.suite_kind, version.pk)
    runs = []
    for version in versions:
        for probe in probes_for(
            suite_kind=version.suite_kind,
            entry_point=version.entry_point,
            visible_tests=list(version.visible_tests),
            statement=version.statement,
            language=version.language,
            signature=version.signature,
        ):
            if probe.name in TIMEOUT_PROBES and stall_on[version.suite_kind] != version.pk:
                continue
            request = run_request_for(version, probe.code)
            limits = replace(
                request.limits, wall_s=min(request.limits.wall_s, CAP_S), cpu_s=min(request.limits.cpu_s, CAP_S)
            )
            runs.append((version.task.slug, probe.name, replace(request, limits=limits)))

    started = time.monotonic()
    with ThreadPoolExecutor(2) as workers:
        results = list(workers.map(lambda run: engine.run(run[2], backend="bwrap", pool=bwrap_pool), runs))
    elapsed = time.monotonic() - started

    verdicts = [(slug, name, result) for (slug, name, _), result in zip(runs, results, strict=True)]
    report = [f"{slug} / {name}: {r.status} {r.message[:300]!r}" for slug, name, r in verdicts]
    print(f"{len(runs)} probe runs on {len(versions)} tasks in {elapsed:.1f} s")
    assert len(versions) >= 44
    passing = [line for line, (_, _, r) in zip(report, verdicts, strict=True) if r.status == Status.PASSED]
    assert passing == [], "probes that earned the reward:\n" + "\n".join(passing)
    broken = [line for line, (_, _, r) in zip(report, verdicts, strict=True) if r.status == Status.SANDBOX_ERROR]
    assert broken == [], "runs the sandbox failed:\n" + "\n".join(broken)
    assert {kind for kind in stall_on} == {"assertions", "check_function", "pytest", "stdio", "function_calls"}


def test_helpers_the_starter_code_gives_are_rewritten_by_two_probes():
    starter = "import math\n\ndef poly(xs, x):\n    return 0\n\ndef _aux():\n    pass\n\ndef find_zero(xs):\n    ...\n"
    assert given_helpers(starter, "find_zero") == ["poly", "_aux"]
    assert given_helpers("def (:", "f") == [] and given_helpers("", "f") == []
    found = {p.name: p for p in probes_for(suite_kind="check_function", entry_point="find_zero",
                                                  visible_tests=[], starter_code=starter)}  # fmt: skip
    for name in ("rewrite_helpers_to_zero", "rewrite_helpers_to_identity"):
        compile(found[name].code, "probe.py", "exec")
        assert "def poly(" in found[name].code and "def find_zero(" in found[name].code
    plain = probes_for(suite_kind="check_function", entry_point="find_zero", visible_tests=[])
    assert not {"rewrite_helpers_to_zero", "rewrite_helpers_to_identity"} & {p.name for p in plain}


def test_every_template_file_is_used_by_some_probe(monkeypatch):
    used = set()
    real = render.template

    def recording(name):
        used.add(name)
        return real(name)

    monkeypatch.setattr(render, "template", recording)
    for kind in SUITES:
        probes(kind)
    on_disk = {str(p.relative_to(render.TEMPLATES)).removesuffix(".py.tmpl") for p in render.TEMPLATES.rglob("*.tmpl")}
    assert used == on_disk


def test_the_probe_templates_are_part_of_the_configuration_hash(tmp_path, monkeypatch):
    shutil.copytree(config.VERIFICATION_DIR / "probes", tmp_path / "probes")
    monkeypatch.setattr(config, "VERIFICATION_DIR", tmp_path)
    config._source_version.cache_clear()
    try:
        before = config._source_version("probes")
        template = tmp_path / "probes" / "templates" / "call" / "exit_at_import.py.tmpl"
        template.write_text(template.read_text() + "# edited\n")
        config._source_version.cache_clear()
        assert config._source_version("probes") != before
    finally:
        config._source_version.cache_clear()
