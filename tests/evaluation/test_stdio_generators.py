"""A stdio task's own test generator and validator, in real sandboxes: inputs made
from seeds (the same seeds, the same inputs), invalid ones dropped by the validator,
answered by the reference; a wrong solution and mutants the task's tests miss caught
by them, and the catching inputs proposed as hidden tests that a new version keeps."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import Flag, ProposedTest
from evaluation.sandbox import engine
from evaluation.sandbox.types import RunRequest, Status
from evaluation.verification.config import VerifyConfig
from evaluation.verification.generated import stdio
from evaluation.verification.generated.proposals import proposed_tests_accept
from evaluation.verification.inline import verification_run_inline
from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.factories import content_data, make_task

from .conftest import needs_bwrap

CONFIG = VerifyConfig(repeats=1, mutants=6, probes=False, backend="bwrap", inputs=1)

# n (1 to 8) and n numbers; every fifth seed writes n = 0, which the validator refuses.
GENERATOR = (
    "import random, sys\nseed = int(sys.argv[1])\nr = random.Random(seed)\n"
    "n = 0 if seed % 5 == 0 else r.randint(1, 8)\nprint(n)\nprint(*[r.randint(-50, 50) for _ in range(n)])\n"
)
GENERATOR_C = (
    "#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) {\n"
    '    unsigned s = (unsigned) atoi(argv[1]);\n    int n = 1 + s % 8;\n    printf("%d\\n", n);\n'
    '    for (int i = 0; i < n; i++) { s = s * 1103515245u + 12345u; printf("%d ", (int) (s >> 16) % 101 - 50); }\n'
    '    printf("\\n");\n}\n'
)
VALIDATOR = (
    "import sys\nlines = sys.stdin.read().split('\\n')\nn = int(lines[0])\nxs = lines[1].split()\n"
    "if not 1 <= n <= 8 or len(xs) != n:\n    sys.exit(f'n is {n}, with {len(xs)} numbers')\n"
)
LARGEST = "input()\nprint(max(map(int, input().split())))\n"
LAST = "input()\nprint(input().split()[-1])\n"  # right only where the largest comes last
# The largest always last: the suite passes LAST.
CASES = [{"input": f"{len(xs)}\n{' '.join(map(str, xs))}\n", "output": f"{xs[-1]}\n"}
         for xs in ([1, 2, 3], [5], [-4, -1], [0, 7, 9, 12], [3, 3, 8])]  # fmt: skip


@pytest.fixture(autouse=True)
def own_compile_cache(private_compile_cache):
    """Every test here builds in a compile cache of its own (conftest.py)."""


@needs_bwrap
def test_a_generator_writes_the_same_inputs_for_the_same_seeds_and_a_validator_judges_them():
    seeds = stdio.seeds_for(7, 6)
    for source, language in ((GENERATOR, "python"), (GENERATOR_C, "c")):
        request = RunRequest(suite_kind="generate", solution=source, language=language,
                             tests={"seeds": seeds, "case_wall_s": 5.0}, limits=stdio._program_limits(6))  # fmt: skip
        first, again = engine.run(request, warm=True), engine.run(request, warm=True)
        assert first.status == Status.PASSED, first.message
        assert first.data["inputs"] == again.data["inputs"] and len(first.data["inputs"]) == 6
    crashing = "import sys\nif int(sys.argv[1]) % 2:\n    raise SystemExit(4)\nprint(1)\nprint(1)\n"
    partly = engine.run(
        RunRequest(
            suite_kind="generate",
            solution=crashing,
            language="python",
            tests={"seeds": [1, 2], "case_wall_s": 5.0},
            limits=stdio._program_limits(2),
        )
    )
    assert partly.data["inputs"] == {"2": "1\n1\n"} and "exited with code 4" in partly.data["failures"]["1"]
    checked = engine.run(RunRequest(suite_kind="validate", solution=VALIDATOR, language="python",
                                    tests={"inputs": ["2\n1 2\n", "0\n\n", "3\n1\n"], "case_wall_s": 5.0},
                                    limits=stdio._program_limits(3)))  # fmt: skip
    verdicts = checked.data["verdicts"]
    assert [v["valid"] for v in verdicts] == [True, False, False]
    assert "n is 0, with 0 numbers" in verdicts[1]["message"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_generated_inputs_catch_what_the_tests_miss_and_the_kept_ones_close_the_gap(curator, client):
    task = make_task(
        owner=curator, slug="largest-stdio", suite_kind="stdio", entry_point="", starter_code="", test_setup="",
        visible_tests=CASES[:1], hidden_tests=CASES[1:],
        solutions=[{"role": "reference", "label": "max", "code": LARGEST},
                   {"role": "adversarial", "label": "last-number", "code": LAST, "note": "the last, not the largest"}],
        test_generator={"language": "python", "source": GENERATOR, "count": 25,
                        "validator": {"language": "python", "source": VALIDATOR}},
    )  # fmt: skip
    task_submit(actor=curator, task=task)
    version = Task.objects.get(pk=task.pk).latest_version
    verification = verification_run_inline(version=version, config=CONFIG)
    generated = verification.summary["generated"]
    assert generated["status"] == "done", generated
    inputs = generated["inputs"]
    assert inputs["generated"] == 25 and inputs["invalid_reasons"].get("invalid", 0) >= 1, inputs
    assert inputs["valid"] + inputs["invalid"] == 25 and "n is 0" in inputs["examples"]["invalid"]
    wrong = generated["wrong_solutions"]
    assert wrong["passing_the_suite"] == ["last-number"] and wrong["caught_passing_the_suite"] == ["last-number"]
    assert Flag.objects.filter(verification=verification, code="ADVERSARIAL_PASSES").exists()
    proposals = list(ProposedTest.objects.filter(verification=verification))
    caught = [p for p in proposals if p.mutant_digest == "wrong:last-number"]
    assert len(caught) == 1 and caught[0].test["input"] and caught[0].generator.startswith("python:")
    # The proposed case is the reference's answer to a generated input, and the wrong program's answer differs.
    xs = [int(x) for x in caught[0].test["input"].split("\n")[1].split()]
    assert caught[0].test["output"].strip() == str(max(xs)) != str(xs[-1])

    client.force_login(curator)
    page = client.get(reverse("verification:report", args=["largest-stdio", version.number])).content.decode()
    assert "Wrong solutions caught" in page and "written by the task's own generator" in page
    assert "catches the wrong solution &#x27;last-number&#x27;, which the tests pass" in page
    made = proposed_tests_accept(actor=curator, proposals=caught, submit=True).versions[0]
    assert made.hidden_tests[-1] == caught[0].test and made.generated_tests[-1]["reason"] == "counterexample"
    again = verification_run_inline(version=made, config=CONFIG)
    assert not Flag.objects.filter(verification=again, code="ADVERSARIAL_PASSES").exists()
    assert again.executions.filter(role="adversarial", status="failed").exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
def test_a_generator_that_does_not_compile_leaves_the_survivors_unjudged_and_says_why(curator):
    task = make_task(
        owner=curator, slug="largest-broken-generator", suite_kind="stdio", entry_point="", starter_code="",
        test_setup="", visible_tests=CASES[:1], hidden_tests=CASES[1:],
        solutions=[{"role": "reference", "label": "max", "code": LARGEST}],
        test_generator={"language": "c", "source": "int main( {"},
    )  # fmt: skip
    task_submit(actor=curator, task=task)
    verification = verification_run_inline(version=Task.objects.get(pk=task.pk).latest_version, config=CONFIG)
    explore = verification.executions.get(role="explore")
    assert explore.status == "failed" and "the task's generator ended compile_error" in explore.result["message"]
    assert verification.summary["generated"]["status"] == "failed"


@pytest.mark.parametrize(
    ("generator", "extra", "path", "says"),
    [
        ({"language": "python"}, {}, "test_generator.source", "generator needs its source"),
        ({"language": "cobol", "source": "x"}, {}, "test_generator.language", "Unknown generator language"),
        ({"language": "python", "source": "x", "count": 0}, {}, "test_generator.count", "from 1 to 200"),
        ({"language": "python", "source": "x", "seed": 3}, {}, "test_generator.seed", "Unknown field"),
        ({"language": "python", "source": "x", "validator": {"language": "python"}}, {},
         "test_generator.validator.source", "validator needs its source"),
        ({"language": "python", "source": "x"}, {"comparator": {"mode": "interactor", "language": "python",
                                                                  "source": "x"}}, "test_generator", "interactive"),
        ({"language": "python", "source": "x"}, {"suite_kind": "assertions", "entry_point": "add"},
         "test_generator", "Only stdio tasks"),
    ],
)  # fmt: skip
def test_a_bad_generator_is_refused_where_it_is_wrong(generator, extra, path, says):
    data = content_data(
        suite_kind="stdio",
        entry_point="",
        visible_tests=CASES[:1],
        hidden_tests=CASES[1:],
        solutions=[{"role": "reference", "label": "max", "code": LARGEST}],
        test_generator=generator,
    )
    data.update(extra)
    if data["suite_kind"] == "assertions":
        data.update(
            visible_tests=["assert add(1, 2) == 3"],
            hidden_tests=["assert add(1, 1) == 2"],
            solutions=[{"role": "reference", "label": "r", "code": "def add(a, b):\n    return a + b\n"}],
        )
    with pytest.raises(ValidationFailed) as raised:
        VersionContent.parse(data)
    assert path in raised.value.details and says in " ".join(raised.value.details[path]), raised.value.details


def test_a_generator_is_part_of_the_hash_only_when_set():
    data = content_data(suite_kind="stdio", entry_point="", visible_tests=CASES[:1], hidden_tests=CASES[1:],
                        solutions=[{"role": "reference", "label": "max", "code": LARGEST}])  # fmt: skip
    plain = VersionContent.parse(data)
    assert "test_generator" not in plain.canonical()
    with_generator = VersionContent.parse({**data, "test_generator": {"language": "python", "source": GENERATOR}})
    assert with_generator.canonical()["test_generator"] == {"language": "python", "source": GENERATOR, "count": 20}
    assert with_generator.content_hash() != plain.content_hash()
