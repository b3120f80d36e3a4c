"""The probes of programs in other languages than Python: each compiles and does the hack
it names (shown by a task it would fool), and none earns the reward on a real task."""

from __future__ import annotations

import os
import subprocess

import pytest

from evaluation.sandbox import engine, languages
from evaluation.sandbox.types import Limits, RunRequest, Status
from evaluation.verification.probes import TIMEOUT_PROBES, probes_for
from evaluation.verification.probes.language_hacks import language_probes, string_literal

from .conftest import needs_bwrap
from .language_samples import SUM, SUM_CASES

NAMES = ["exit_before_main", "print_sample_output", "read_answer_file", "write_outside_scratch", "spin_forever",
         "allocate_forever"]  # fmt: skip
# A task whose every expected output is empty: a program that exits 0 at once passes it.
SILENT = [{"input": "1\n", "output": ""}, {"input": "2\n", "output": ""}]
# A task whose every expected output is the visible one: printing the sample passes it.
SAME = [{"input": "1\n", "output": 'ok "#$\\ 100%\n'}, {"input": "2\n", "output": 'ok "#$\\ 100%\n'}]


def run(pool, language: str, code: str, cases: list[dict], *, wall_s: float = 10.0):
    request = RunRequest(suite_kind="stdio", solution=code, tests={"visible": cases[:1], "hidden": cases[1:]},
                         language=language, limits=Limits(wall_s=wall_s, cpu_s=wall_s, memory_mb=256))  # fmt: skip
    return engine.run(request, backend="bwrap", pool=pool)


def by_name(language: str, cases: list[dict]) -> dict:
    return {probe.name: probe for probe in language_probes(language, {c["input"]: c["output"] for c in cases[:1]})}


def test_every_language_has_the_four_probes_and_python_keeps_its_own():
    for language in languages.LANGUAGES:
        assert [probe.name for probe in language_probes(language, {"1\n": "2\n"})] == NAMES, language
    python = {p.name for p in probes_for(suite_kind="stdio", entry_point="", visible_tests=SUM_CASES)}
    assert "exit_at_import" in python and "exit_before_main" not in python
    assert probes_for(suite_kind="stdio", entry_point="", visible_tests=SUM_CASES, language="cobol") == []
    assert probes_for(suite_kind="check_function", entry_point="f", visible_tests=[], language="c") == []
    assert "spin_forever" in TIMEOUT_PROBES  # its wall time is capped in verification, as a sleep's is


@pytest.mark.parametrize(
    ("language", "text", "literal"),
    [
        ("c", 'a "b"\\\n', '"a \\"b\\"\\\\\\n"'),
        ("ruby", "#{x}\n", '"\\#{x}\\n"'),
        ("php", "$x\n", '"\\$x\\n"'),
        ("go", "tab\there\r\n", '"tab\\there\\r\\n"'),
    ],
)
def test_an_expected_output_becomes_a_literal_of_the_language(language, text, literal):
    assert string_literal(text, language=language) == literal


def test_an_output_outside_printable_ascii_is_not_spliced_into_code():
    assert string_literal("café\n", language="java") is None
    assert string_literal("a\x00b", language="c") is None
    assert "print_sample_output" not in by_name("java", [{"input": "1\n", "output": "ünïcode\n"}])


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(languages.LANGUAGES))
def test_each_probe_does_its_hack_and_none_passes_a_real_task(bwrap_pool, language):
    # Each probe, where its hack would work, passes: so it compiled and did what it says.
    assert run(bwrap_pool, language, by_name(language, SILENT)["exit_before_main"].code, SILENT).status == "passed"
    assert run(bwrap_pool, language, by_name(language, SAME)["print_sample_output"].code, SAME).status == "passed"
    # On a real task none passes, and each fails as the solution's own failure.
    probes = by_name(language, SUM_CASES)
    assert run(bwrap_pool, language, SUM[language], SUM_CASES).status == Status.PASSED
    for name in ("exit_before_main", "print_sample_output"):
        result = run(bwrap_pool, language, probes[name].code, SUM_CASES)
        assert result.status == Status.FAILED, (name, result.status, result.message)
    spun = run(bwrap_pool, language, probes["spin_forever"].code, SUM_CASES, wall_s=1.0)
    assert spun.status == Status.TIMEOUT, (spun.status, spun.message)
    allocated = run(bwrap_pool, language, probes["allocate_forever"].code, SUM_CASES)
    # Memory the limit stopped, or an allocator that gave up and left the program to exit
    # with nothing written (C's malloc returning NULL): the program's failure either way.
    assert allocated.status in (Status.MEMORY_EXCEEDED, Status.FAILED, Status.ERROR), allocated.message


@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(languages.LANGUAGES))
def test_the_answer_file_probe_finds_an_answer_a_careless_judge_leaves_beside_it(language, tmp_path):
    # Outside any sandbox, in a directory holding the jury's answer as careless judges do:
    # it compiles, finds the file and prints it (so in a sandbox, finding nothing is the sandbox's doing).
    from tests.catalogue_runner import _env, _program

    argv = _program(language, by_name(language, SUM_CASES)["read_answer_file"].code, tmp_path)
    (tmp_path / "expected.out").write_text("the answer: 42\n")
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=_env(str(tmp_path)))
    assert done.stdout == "the answer: 42\n", (done.returncode, done.stderr[-500:])


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(languages.LANGUAGES))
def test_the_file_probes_find_nothing_and_leave_nothing_in_a_sandbox(bwrap_pool, language):
    probes = by_name(language, SUM_CASES)
    read = run(bwrap_pool, language, probes["read_answer_file"].code, SUM_CASES)
    assert read.status == Status.FAILED, (read.status, read.message)
    assert all("expected" in t.message or "differs" in t.message or t.message for t in read.tests)
    wrote = run(bwrap_pool, language, probes["write_outside_scratch"].code, SUM_CASES)
    assert wrote.status == Status.FAILED, (wrote.status, wrote.message)
    # The host is clean: nothing of the probe's outside the sandbox.
    for target in (
        "/taskplatform-probe",
        "/usr/taskplatform-probe",
        "/etc/taskplatform-probe",
        "/tmp/taskplatform-probe",
    ):
        assert not os.path.exists(target), target
