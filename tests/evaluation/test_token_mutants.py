"""Token mutants of C-family programs: one token (or one `if` condition) changed, never
inside a comment, a literal or an include; reproducible; and on the catalogue's tasks,
judged in real sandboxes, killed by the tests, with those that do not compile left
out of the score."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import Status
from evaluation.verification import figures
from evaluation.verification.mutants import TOKEN_LANGUAGES, generate_token_mutants

from .conftest import needs_bwrap

C_SOURCE = """#include <stdio.h>
// if (a < b) stays a comment
int main(void) {
    long long a, b;
    const char *text = "x < y && 2";
    if (scanf("%lld %lld", &a, &b) != 2) return 1;
    if (a < b && b > 0) printf("%lld\\n", a + b);
    else printf("%d\\n", 7);
    return 0;
}
"""
CATALOGUE = Path(__file__).resolve().parents[2] / "tasks_app/catalogue/data/languages.json"


def changed_line(source: str, mutant: str) -> tuple[str, str]:
    (before, after) = next((a, b) for a, b in zip(source.splitlines(), mutant.splitlines(), strict=True) if a != b)
    return before.strip(), after.strip()


def test_every_family_changes_one_token_of_code_and_nothing_else():
    mutants = generate_token_mutants(C_SOURCE, language="c", limit=100)
    changes = {(m.family, changed_line(C_SOURCE, m.source)[1]) for m in mutants}
    assert ("relational", 'if (a <= b && b > 0) printf("%lld\\n", a + b);') in changes
    assert ("logical", 'if (a < b || b > 0) printf("%lld\\n", a + b);') in changes
    assert ("arithmetic", 'if (a < b && b > 0) printf("%lld\\n", a - b);') in changes
    assert ("constant", 'else printf("%d\\n", 8);') in changes
    assert ("branch", 'if (!(a < b && b > 0)) printf("%lld\\n", a + b);') in changes
    for mutant in mutants:  # the comment, the string, the format and the include are never touched
        before, after = changed_line(C_SOURCE, mutant.source)
        assert not before.startswith(("#", "//", "const char")), mutant.description
        assert after.count('"') == before.count('"') and "%lld %lld" in mutant.source
        assert mutant.description.startswith(f"line {mutant.line}: ")
    assert len({m.digest for m in mutants}) == len(mutants)


def test_mutants_are_reproducible_and_spread_over_families():
    first = generate_token_mutants(C_SOURCE, language="c", seed=3, limit=5)
    assert first == generate_token_mutants(C_SOURCE, language="c", seed=3, limit=5)
    assert len({m.family for m in first}) == 5
    assert [m.digest for m in first] != [m.digest for m in generate_token_mutants(C_SOURCE, language="c", seed=4,
                                                                                  limit=5)]  # fmt: skip


def test_generics_templates_arrows_and_go_init_statements_are_left_alone():
    java = "import java.util.*;\nclass Main { List<Integer> xs = new ArrayList<>(); int f(int n) { return n; } }\n"
    assert all(m.family == "constant" for m in generate_token_mutants(java, language="java", limit=50))
    js = "const f = (x) => x->y;\nif (a === b) { g(); }\n"
    assert {changed_line(js, m.source)[1] for m in generate_token_mutants(js, language="javascript")} == {
        "if (a !== b) { g(); }",
        "if (!(a === b)) { g(); }",
    }
    go = "package main\n\nfunc f(m map[int]int) {\n\tif v, ok := m[1]; ok {\n\t}\n\tif x > 1 {\n\t}\n}\n"
    branches = [m.source for m in generate_token_mutants(go, language="go", limit=50) if m.family == "branch"]
    assert len(branches) == 1 and "\tif !(x > 1) {" in branches[0]


def test_every_language_but_python_is_mutated_on_tokens():
    assert set(TOKEN_LANGUAGES) == {"c", "cpp17", "cpp20", "java", "csharp", "javascript", "typescript", "go", "rust",
                                    "php", "ruby", "lua"}  # fmt: skip
    with pytest.raises(ValueError, match="no token mutants for 'python'"):
        generate_token_mutants("x = 1", language="python")


def changes_of(source: str, language: str) -> set[tuple[str, str]]:
    return {(m.family, changed_line(source, m.source)[1]) for m in generate_token_mutants(source, language=language,
                                                                                          limit=200)}  # fmt: skip


def test_lua_ruby_php_and_rust_are_read_in_their_own_syntax():
    lua = "-- if a < b then x end\nif a ~= b and c > 1 then\n  print(a + b)\nend\n"
    assert {
        ("relational", "if a == b and c > 1 then"),
        ("logical", "if a ~= b or c > 1 then"),
        ("branch", "if not (a ~= b and c > 1) then"),
        ("arithmetic", "print(a - b)"),
    } <= changes_of(lua, "lua")
    assert all(not line.startswith("--") for _, line in changes_of(lua, "lua"))
    ruby = "# if a < b\nputs a + b if a < b # note: a < b\n"
    assert changes_of(ruby, "ruby") == {
        ("arithmetic", "puts a - b if a < b # note: a < b"),
        ("relational", "puts a + b if a <= b # note: a < b"),
        ("branch", "puts a + b if !(a < b) # note: a < b"),
    }
    php = "<?php\n# if ($a < $b)\nif ($a < $b) { echo $a + $b; }\n"
    assert ("branch", "if (!($a < $b)) { echo $a + $b; }") in changes_of(php, "php")
    assert all(not line.startswith("#") for _, line in changes_of(php, "php"))
    rust = "fn f<'a>(s: &'a str, n: i64) -> i64 {\n    if let Some(c) = s.chars().next() { return 1; }\n" \
           "    if n > 0 { n - 1 } else { 0 }\n}\n"  # fmt: skip
    found = changes_of(rust, "rust")
    assert ("branch", "if !(n > 0) { n - 1 } else { 0 }") in found and (
        "arithmetic",
        "if n > 0 { n + 1 } else { 0 }",
    ) in found
    assert not any("let" in line and family == "branch" for family, line in found)  # `if let` is left alone


def test_a_mutant_that_does_not_compile_leaves_every_figure():
    outcomes = [
        figures.Outcome("mutant", "killed", 0, "failed", 0.1),
        figures.Outcome("mutant", "survivor", 0, "passed", 0.1),
        figures.Outcome("mutant", "stillborn", 0, "compile_error", 0.1),
    ]
    summary = figures.summarise(outcomes, time_limit_s=1.0)
    assert summary["mutation_score"]["successes"] == 1 and summary["mutation_score"]["trials"] == 2
    assert summary["stillborn_mutants"] == ["stillborn"]
    assert summary["known_wrong_pass_rate"]["trials"] == 2


def _catalogue_tasks() -> list[tuple[str, dict]]:
    found = []
    for task in json.loads(CATALOGUE.read_text()):
        content = task["content"] if isinstance(task["content"], dict) else ast.literal_eval(task["content"])
        if content["language"] in TOKEN_LANGUAGES:
            found.append((task["slug"], content))
    return found


class _Version:
    def __init__(self, content: dict) -> None:
        self.__dict__.update(content)
        self.comparator = content.get("comparator")


@needs_bwrap
@pytest.mark.slow
def test_the_catalogues_tests_kill_the_token_mutants_of_its_references(bwrap_pool):
    outcomes, report = [], []
    for slug, content in _catalogue_tasks():
        version = _Version(content)
        reference = next(s["code"] for s in content["solutions"] if s["role"] == "reference")
        for mutant in generate_token_mutants(reference, language=content["language"], limit=8):
            result = engine.run(run_request_for(version, mutant.source), backend="bwrap", pool=bwrap_pool)
            assert result.status != Status.SANDBOX_ERROR, (slug, mutant.description, result.message)
            outcomes.append(figures.Outcome("mutant", mutant.digest, 0, str(result.status), result.wall_s))
            report.append(f"{slug} {mutant.description}: {result.status}")
    score = figures.mutation_score(outcomes)
    print(f"{len(outcomes)} mutants, score {score.value:.2f}, {len(figures.stillborn_mutants(outcomes))} stillborn")
    # A short reference in a compact style (`a+b`, iterators) has few sites, and some
    # mutants do not compile; the catalogue as a whole gives a measure all the same.
    assert len(outcomes) >= 40 and score.trials >= 30, report
    assert score.value >= 0.6, report
    assert len(figures.stillborn_mutants(outcomes)) <= len(outcomes) // 4, report


def test_a_mutants_diff_names_the_files_of_its_language():
    from evaluation.verification.selectors import _diff, source_suffix

    assert [source_suffix(lang) for lang in ("python", "c", "cpp20", "java", "go")] == [".py", ".c", ".cpp", ".java",
                                                                                       ".go"]  # fmt: skip
    (mutant,) = [
        m
        for m in generate_token_mutants(C_SOURCE, language="c", limit=100)
        if "the constant 7 became 8" in m.description
    ]
    diff = _diff(C_SOURCE, mutant.source, source_suffix("c"))
    assert diff.startswith("--- reference.c\n+++ mutant.c\n") and '+    else printf("%d\\n", 8);' in diff
