"""What a patch changes (the lines, the functions holding them) and the test-tampering
probes of a repository task, without a sandbox: the parts planning builds on."""

from __future__ import annotations

import ast

import pytest

from evaluation.verification.probes import repository_probes
from evaluation.verification.repository.changes import changed_lines, changed_ranges
from evaluation.verification.repository.scratch import PatchRefused, ScratchRepository

SOURCE = '''"""A module."""
LIMIT = 10


class Box:
    size = 3

    def area(self):
        return self.size ** 2

    def grow(self, by):
        def clamp(value):
            return min(value, LIMIT)

        self.size = clamp(self.size + by)


def helper(x):
    return x + 1
'''


def _line(text: str) -> int:
    return next(number for number, line in enumerate(SOURCE.splitlines(), start=1) if text in line)


def test_hunks_without_context_give_the_added_lines_and_both_sides_of_a_cut():
    hunks = "@@ -3 +3 @@\n-a\n+b\n@@ -8,0 +9,2 @@\n+c\n+d\n@@ -12,2 +13,0 @@\n-e\n-f\n@@ -1 +0,0 @@\n-g\n"
    assert changed_lines(hunks) == {3, 9, 10, 13, 14, 1}


def test_a_change_maps_to_the_innermost_function_or_else_the_statement_holding_it():
    tree = ast.parse(SOURCE)
    spans = {node.name: (node.lineno, node.end_lineno) for node in ast.walk(tree) if hasattr(node, "name")}
    assert changed_ranges(SOURCE, {_line("return self.size ** 2")}) == [spans["area"]]
    assert changed_ranges(SOURCE, {_line("return min(value")}) == [spans["clamp"]]
    assert changed_ranges(SOURCE, {_line("size = 3")}) == [(_line("size = 3"),) * 2]  # a class attribute
    assert changed_ranges(SOURCE, {_line("LIMIT = 10")}) == [(2, 2)]
    assert changed_ranges(SOURCE, {_line("class Box"), 7}) == [spans["Box"]]  # the class line, then a blank line
    # A nested function and the function holding it: one range, the outer one.
    assert changed_ranges(SOURCE, {_line("return min(value"), _line("self.size = clamp")}) == [spans["grow"]]
    assert changed_ranges(SOURCE, {_line("return x + 1"), _line("return self.size")}) == sorted(
        [spans["helper"], spans["area"]]
    )
    assert changed_ranges("def broken(:\n", {1}) == []


def test_a_scratch_repository_refuses_a_patch_that_does_not_apply_and_writes_patches_git_applies():
    files = {"pkg/__init__.py": (b"", False), "pkg/mod.py": (SOURCE.encode(), False)}
    with ScratchRepository(files) as scratch:
        with pytest.raises(PatchRefused):
            scratch.apply(
                "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x\n+y\n"
            )
        scratch.write("pkg/mod.py", SOURCE.replace("x + 1", "x + 2").encode())
        scratch.write("pkg/new.py", b"NEW = 1\n")
        scratch.write("pkg/__init__.py", None)
        patch = scratch.patch()
        assert scratch.changed_paths() == ["pkg/mod.py", "pkg/new.py"]  # deleted files left out
        scratch.reset()
        assert scratch.read("pkg/new.py") is None and scratch.read("pkg/__init__.py") == b""
        scratch.apply(patch)
        assert scratch.read("pkg/new.py") == b"NEW = 1\n" and scratch.read("pkg/__init__.py") is None
        with pytest.raises(ValueError):
            scratch.write("../outside.py", b"")


def test_probes_cover_visible_and_hidden_test_files_and_respect_future_imports():
    found = repository_probes(
        fail_to_pass=["tests/test_hidden.py::test_fix", "tests/test_cls.py::TestThing::test_method[1-2]"],
        pass_to_pass=["tests/test_seen.py::test_old"],
        tree_paths={"tests/test_seen.py", "tests/test_cls.py", "pkg/__init__.py"},
        import_targets=["pkg/__init__.py"],
        read=lambda path: '"""Doc."""\nfrom __future__ import annotations\n\nVALUE = 1\n',
    )
    probes = {probe.name: probe for probe in found}
    assert list(probes) == ["delete_test_files", "trivial_test_files", "conftest_passes_everything",
                            "pytest_ini_deselects", "skip_at_import", "exit_at_import"]  # fmt: skip
    assert probes["delete_test_files"].edits == {"tests/test_seen.py": None, "tests/test_cls.py": None}
    trivial = probes["trivial_test_files"].edits
    assert set(trivial) == {"tests/test_hidden.py", "tests/test_cls.py", "tests/test_seen.py"}
    namespace: dict = {}
    exec(compile(trivial["tests/test_cls.py"], "t.py", "exec"), namespace)  # noqa: S102 - our own fixed text
    assert hasattr(namespace["TestThing"], "test_method")
    assert set(probes["conftest_passes_everything"].edits) == {"conftest.py", "tests/conftest.py"}
    ini = probes["pytest_ini_deselects"].edits["pytest.ini"]
    assert ini.count("--deselect") == 3
    skipped = probes["skip_at_import"].edits["pkg/__init__.py"]
    compile(skipped, "pkg/__init__.py", "exec")  # still compiles: the skip comes after the __future__ import
    assert skipped.index("from __future__") < skipped.index("pytest.skip(")


def test_without_test_files_in_the_tree_or_an_import_target_those_probes_are_left_out():
    found = repository_probes(fail_to_pass=["tests/test_hidden.py::test_fix"], pass_to_pass=[], tree_paths=set(),
                              import_targets=[], read=lambda path: None)  # fmt: skip
    assert [probe.name for probe in found] == ["trivial_test_files", "conftest_passes_everything",
                                               "pytest_ini_deselects"]  # fmt: skip
