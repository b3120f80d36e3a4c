"""Programs in eleven languages besides Python, in real sandboxes: each passes its
canonical sample on both backends (bwrap binds the host's toolchains, the Docker image
carries the same packages), a compile error is the solution's `compile_error` (never a sandbox
error), a source is compiled once and then served from the compile cache, memory
and time limits hold and are named, and the stdio comparators never let truncated,
extra or differently cased output pass unless the task says so."""

from __future__ import annotations

import json

import pytest

from evaluation.sandbox import compile_cache, engine, languages, programs
from evaluation.sandbox.harness import compare
from evaluation.sandbox.types import Limits, RunRequest, Status
from tasks_app import languages as task_languages

from .conftest import needs_bwrap
from .language_samples import BROKEN, SUM, SUM_CASES


@pytest.fixture(autouse=True)
def own_compile_cache(private_compile_cache):
    """Every test here builds in a compile cache of its own (conftest.py)."""


def stdio(pool, language: str, source: str, cases=SUM_CASES, *, memory_mb: int = 256, wall_s: float = 10.0,
          comparator: dict | None = None, backend: str = "bwrap"):  # fmt: skip
    tests = {"visible": cases[:1], "hidden": cases[1:]}
    if comparator:
        tests["comparator"] = comparator
    request = RunRequest(suite_kind="stdio", solution=source, tests=tests, language=language,
                         limits=Limits(wall_s=wall_s, cpu_s=wall_s, memory_mb=memory_mb))  # fmt: skip
    return engine.run(request, backend=backend, pool=pool)


def test_the_language_tables_agree_and_every_language_is_installed():
    assert task_languages.LANGUAGES == languages.LANGUAGE_NAMES
    # The harness compares in every mode but `checker`, which is the task's program (special_judges.py).
    # `values` is the function tests' own (function_calls.py), set by the host, never by a task.
    harness_modes = tuple(mode for mode in compare.MODES if mode != "values")
    assert (*harness_modes, *task_languages.JUDGE_PROGRAM_MODES) == task_languages.COMPARATOR_MODES
    missing = {name: why for name, why in languages.available().items() if why.startswith("missing")}
    assert not missing, (
        f"make test installs every toolchain (python -m evaluation.sandbox.languages packages): {missing}"
    )


@pytest.mark.parametrize("language", sorted(SUM))
def test_every_language_passes_its_canonical_sample(sandbox, language):
    backend, pool = sandbox
    result = stdio(pool, language, SUM[language], backend=backend)
    assert result.status == Status.PASSED, (result.status, result.message[-1500:], result.stderr[-1500:])
    assert [t.outcome for t in result.tests] == ["passed"] * len(SUM_CASES)


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_a_source_the_compiler_refuses_is_a_compile_error_with_its_message(sandbox, language):
    backend, pool = sandbox
    result = stdio(pool, language, BROKEN[language], backend=backend)
    assert result.status == Status.COMPILE_ERROR, (result.status, result.message[-1500:])
    assert result.message.strip() and "the compiler exited with code" in result.message
    assert result.tests == []


@needs_bwrap
def test_a_source_is_compiled_once_and_then_served_from_the_cache(bwrap_pool, compiles):
    source = SUM["cpp17"]
    for _ in range(3):
        assert stdio(bwrap_pool, "cpp17", source).status == Status.PASSED
    assert compiles == ["cpp17"]
    compile_cache.forget_memory()  # a new worker process on the same host: from disk
    assert stdio(bwrap_pool, "cpp17", source).status == Status.PASSED
    assert compiles == ["cpp17"] and compile_cache.hits["disk"] >= 1
    # A compile error is kept too: the same source fails the same way without compiling again.
    assert stdio(bwrap_pool, "c", BROKEN["c"]).status == Status.COMPILE_ERROR
    assert stdio(bwrap_pool, "c", BROKEN["c"]).status == Status.COMPILE_ERROR
    assert compiles == ["cpp17", "c"]


@needs_bwrap
@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("c", "#include <stdlib.h>\n#include <string.h>\nint main(void){for(;;){char*p=malloc(1<<24);"
         "if(!p)return 3;memset(p,1,1<<24);}}\n"),
        ("cpp17", "#include <vector>\nint main(){std::vector<std::vector<char>> v;for(;;)v.emplace_back(1<<24,1);}\n"),
        ("java", "import java.util.*;\npublic class Main { public static void main(String[] a) {\n"
         "  List<long[]> keep = new ArrayList<>(); for (;;) keep.add(new long[1 << 21]); } }\n"),
        ("go", "package main\n\nvar keep [][]byte\n\nfunc main() {\n\tfor {\n\t\tb := make([]byte, 1<<24)\n"
         "\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\tkeep = append(keep, b)\n\t}\n}\n"),
        ("javascript", "const keep = []; for (;;) keep.push(new Array(1 << 20).fill(1.5));\n"),
    ],
)  # fmt: skip
def test_a_program_past_its_memory_is_memory_exceeded(bwrap_pool, language, source):
    result = stdio(bwrap_pool, language, source, memory_mb=128, wall_s=20)
    assert result.status == Status.MEMORY_EXCEEDED, (result.status, result.message, result.stderr[-800:])


@needs_bwrap
@pytest.mark.parametrize(
    ("language", "source", "status", "message"),
    [
        ("cpp17", "int main(){return 3;}\n", Status.FAILED, "exit code 3"),
        ("c", "int main(void){int*p=0;return *p;}\n", Status.FAILED, "signal 11"),
        ("rust", "fn main() { let v: Vec<i32> = Vec::new(); println!(\"{}\", v[1]); }\n", Status.FAILED,
         "exit code 101"),
        ("c", "int main(void){volatile int x=0;for(;;)x++;}\n", Status.TIMEOUT, ""),
        ("java", "public class Main { public static void main(String[] a) { for(;;){} } }\n", Status.TIMEOUT, ""),
    ],
)  # fmt: skip
def test_a_crash_fails_its_tests_and_a_spin_times_out(bwrap_pool, language, source, status, message):
    result = stdio(bwrap_pool, language, source, wall_s=2)
    assert result.status == status, (result.status, result.message, result.stderr[-500:])
    if message:
        assert any(message in t.message for t in result.tests)


# -- comparators -----------------------------------------------------------------------------

ECHO = "import sys\nsys.stdout.write(sys.stdin.read())\n"  # the case's input is its output


@pytest.mark.parametrize(
    ("comparator", "expected", "got", "accepted"),
    [
        (None, "1 2\n3\n", "1 2   \n3\n\n", True),  # lines: trailing spaces and empty lines
        (None, "1 2\n3\n", "1 2\n", False),  # truncated
        (None, "1 2\n3\n", "1 2\n3\n4\n", False),  # extra
        (None, "Yes\n", "yes\n", False),  # never case-blind by default
        ({"mode": "exact"}, "1 2\n", "1 2", False),
        ({"mode": "exact"}, "1 2\n", "1 2\n", True),
        ({"mode": "tokens"}, "1 2\n3\n", "1\n2 3", True),
        ({"mode": "tokens"}, "1 2 3", "1 2", False),
        ({"mode": "tokens"}, "1 2 3", "1 2 3 4", False),
        ({"mode": "tokens_nocase"}, "YES no", "yes NO", True),
        ({"mode": "tokens_nocase"}, "YES no", "yes", False),
        ({"mode": "float", "abs_tol": 1e-6}, "0.333333 x", "0.3333334 x", True),
        ({"mode": "float", "abs_tol": 1e-6}, "0.333333", "0.3334", False),
        ({"mode": "float", "rel_tol": 1e-3}, "1000000", "1000500", True),
        ({"mode": "float", "rel_tol": 1e-3}, "1000000 2", "1000000", False),
        ({"mode": "float"}, "nan", "nan", True),
        ({"mode": "float", "abs_tol": 1}, "nan", "1", False),
        ({"mode": "unordered_lines"}, "a\nb\nb\n", "b\na\nb\n", True),
        ({"mode": "unordered_lines"}, "a\nb\nb\n", "b\na\n", False),
        ({"mode": "unordered_lines"}, "a\nb\n", "b\na\na\n", False),
    ],
)
def test_comparators_accept_only_what_their_mode_allows(comparator, expected, got, accepted):
    assert (compare.mismatch(comparator, expected, got) is None) is accepted


@needs_bwrap
def test_a_task_comparator_decides_a_real_run(bwrap_pool):
    cases = [{"input": "0.3333334\n", "output": "0.333333\n"}, {"input": "1 2\n", "output": "1 2\n"}]
    loose = stdio(bwrap_pool, "python", ECHO, cases, comparator={"mode": "float", "abs_tol": 1e-6})
    strict = stdio(bwrap_pool, "python", ECHO, cases)
    assert loose.status == Status.PASSED and strict.status == Status.FAILED
    assert "line 1: expected '0.333333', got '0.3333334'" in strict.tests[0].message + strict.tests[1].message


@needs_bwrap
def test_a_warm_sandbox_keeps_a_built_program_and_is_sent_it_once(monkeypatch):
    from evaluation.sandbox.base import SupervisorSandbox
    from evaluation.sandbox.pool import SandboxPool

    sizes = []
    real_send = SupervisorSandbox._send

    def measuring(self, frame):
        if frame.get("op") == "run" and frame.get("kind") == "stdio":
            sizes.append(len(json.dumps(frame)))
        return real_send(self, frame)

    monkeypatch.setattr(SupervisorSandbox, "_send", measuring)
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=1)
    try:
        for _ in range(3):
            assert stdio(pool, "go", SUM["go"]).status == Status.PASSED
        assert sizes[0] > 500_000 and max(sizes[1:]) < 20_000, sizes  # the binary went once
        # A sandbox that does not hold what the host thinks it does: our fault, so the run
        # is redone in a fresh sandbox, which is sent everything, and the verdict stands.
        built = programs.prepared(
            RunRequest(suite_kind="stdio", solution=SUM["c"], tests={}, language="c"),
            lambda r: engine.run(r, backend="bwrap", pool=pool),
            "bwrap",
        )
        with pool.lease(hash_seed=1) as sandbox:
            sandbox.held.update({digest: 1 for digest in built.program["digests"].values()})  # never sent
        result = stdio(pool, "c", SUM["c"])
        assert result.status == Status.PASSED and result.anomaly == "program_not_held"
    finally:
        pool.close()


# Tries to rewrite the program it runs from (the sandbox's held copy of it) and to find
# it in the run directory; says "kept" when neither works. Had one run changed the copy,
# the next run's exec of it would fail. (The kernel refuses writes to a file being
# executed, and the held copy is sealed against writes besides: program.py.)
REWRITES_ITSELF_C = r"""#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    int changed = 0;
    int fd = open("/proc/self/exe", O_RDWR);
    if (fd >= 0) {
        if (pwrite(fd, "XXXX", 4, 0) == 4) changed = 1;
        if (ftruncate(fd, 0) == 0) changed = 1;
        close(fd);
    }
    if (access("main", F_OK) == 0) {
        int again = open("main", O_WRONLY | O_TRUNC);
        if (again >= 0 && write(again, "XXXX", 4) == 4) changed = 1;
    }
    puts(changed ? "changed" : "kept");
}
"""


def test_a_held_built_program_cannot_be_changed_by_a_run_for_the_next(sandbox):
    backend, pool = sandbox
    cases = [{"input": "", "output": "kept\n"}]
    for _ in range(3):  # the first run sends the program; the others exec the held copy
        result = stdio(pool, "c", REWRITES_ITSELF_C, cases, backend=backend)
        assert result.status == Status.PASSED, (result.status, result.message, [t.message for t in result.tests])
    assert result.anomaly is None


def test_the_sandbox_image_carries_every_languages_packages():
    # bwrap binds the host's toolchains, which make test installs from the language table;
    # the Docker image installs its own, listed in both of its recipes: all three agree.
    from pathlib import Path

    recipes = Path(__file__).resolve().parents[2] / "platform" / "sandbox"
    script = (recipes / "build-offline.sh").read_text()
    offline = next(line for line in script.splitlines() if line.startswith("TOOLCHAINS="))
    assert sorted(offline.removeprefix("TOOLCHAINS=").split(",")) == languages.debian_packages()
    dockerfile = (recipes / "Dockerfile").read_text().replace("\\\n", " ")
    installed = dockerfile.split("--no-install-recommends", 1)[1].split(";", 1)[0].split()
    assert set(languages.debian_packages()) <= set(installed), sorted(set(languages.debian_packages()) - set(installed))
