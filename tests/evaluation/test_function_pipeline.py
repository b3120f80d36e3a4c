"""A function_calls task through verification, the content rules, the editor and the
export: its reference passes on every repeat, its wrong solution fails, its mutants
and probes run in its language and no probe earns the reward; bad signatures and
tests are refused naming the field; the form's one-line signature round-trips; the
exported prompt declares the function in the task's language."""

from __future__ import annotations

import pytest

from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.models import Task
from tasks_app.services import task_submit
from tasks_app.ui.suite_text import SuiteTextError, signature_from_text, signature_to_text
from tests.factories import content_data, make_task

from .conftest import needs_bwrap
from .function_samples import HIDDEN, RIGHT, SIGNATURE, VISIBLE, WRONG

CONFIG = VerifyConfig(repeats=2, mutants=6, probes=True, backend="bwrap", inputs=0)


def calls_content(language: str, **extra) -> dict:
    return content_data(
        suite_kind="function_calls", language=language, entry_point="top_k", starter_code="", test_setup="",
        signature=SIGNATURE, visible_tests=VISIBLE, hidden_tests=HIDDEN,
        solutions=[{"role": "reference", "label": "ref", "code": RIGHT[language]},
                   {"role": "adversarial", "label": "first-k", "code": WRONG[language]}],
        **extra,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
@pytest.mark.parametrize("language", ["cpp17", "python"])
def test_a_function_task_verifies_with_its_reference_wrong_solution_mutants_and_probes(curator, language):
    data = {k: v for k, v in calls_content(language).items() if k != "statement"}
    task = make_task(owner=curator, slug=f"top-k-{language}", **data)
    task_submit(actor=curator, task=task)
    verification = verification_run_inline(version=Task.objects.get(pk=task.pk).latest_version, config=CONFIG)
    runs = {(e.role, e.status) for e in verification.executions.all()}
    assert ("reference", "passed") in runs and ("adversarial", "failed") in runs, runs
    assert ("reference", "failed") not in runs
    mutants = list(verification.executions.filter(role="mutant").values_list("status", flat=True))
    assert mutants and "sandbox_error" not in mutants, mutants
    probes = {e.subject: e.status for e in verification.executions.filter(role="probe")}
    assert {"exit_in_function", "print_fake_result", "spin_forever"} <= set(probes), probes
    if language == "python":  # the interpreter's own hacks too: always-equal objects, frame walks, ...
        assert len(probes) > 10, probes
    assert "passed" not in probes.values(), probes
    assert probes["spin_forever"] == "timeout", probes
    assert not verification.executions.filter(status="sandbox_error").exists()
    assert not verification.flags.filter(code__in=["REFERENCE_FAILS", "HACKABLE"]).exists()


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"signature": None}, "signature", "Required for function_calls"),
        ({"signature": {"params": [], "returns": "dict[str,int]"}}, "signature.returns", "not a type"),
        ({"signature": {"params": [{"name": "class", "type": "int"}], "returns": "int"}},
         "signature.params[0].name", "reserved"),
        ({"signature": {"params": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}], "returns": "int"}},
         "signature.params[1].name", "Duplicate"),
        ({"language": "c", "signature": {"params": [{"name": "m", "type": "list[list[int]]"}], "returns": "int"}},
         "signature.params[0].type", "C takes lists of scalars only"),
        ({"hidden_tests": [{"args": [[1, 2.5], 1], "expected": [2]}]}, "hidden_tests[0].args[0][1]", "an int"),
        ({"hidden_tests": [{"args": [[1], 2**63], "expected": [1]}]}, "hidden_tests[0].args[1]", "64 bits"),
        ({"hidden_tests": [{"args": [[1]], "expected": [1]}]}, "hidden_tests[0].args", "the signature has 2"),
        ({"hidden_tests": [{"args": [[1], 1]}]}, "hidden_tests[0].expected", "required"),
        ({"hidden_tests": [{"args": [[1], 1], "expected": "1"}]}, "hidden_tests[0].expected", "list[int]"),
        ({"hidden_tests": ["assert top_k([1], 1) == [1]"]}, "hidden_tests[0]", "args"),
        ({"entry_point": "main"}, "entry_point", "reserved"),
        ({"comparator": {"mode": "tokens"}}, "comparator.mode", "only mode 'float'"),
        ({"suite_kind": "stdio", "entry_point": ""}, "signature", "Only for suite kind 'function_calls'"),
    ],
)  # fmt: skip
def test_bad_function_content_is_refused_naming_the_field(changes, path, words):
    data = {**calls_content("go"), **changes}
    with pytest.raises(ValidationFailed) as caught:
        VersionContent.parse(data)
    messages = caught.value.details.get(path, [])
    assert any(words in m for m in messages), caught.value.details


def test_a_function_tasks_signature_is_hashed_and_a_float_result_is_kept_as_a_float():
    data = calls_content("java")
    base = VersionContent.parse(data)
    assert base.canonical()["signature"] == SIGNATURE
    other = VersionContent.parse({**data, "signature": {**SIGNATURE, "returns": "list[float]"},
                                  "visible_tests": [{"args": [[5, 4, 1], 2], "expected": [5, 4]}]})  # fmt: skip
    assert other.content_hash() != base.content_hash()
    assert other.visible_tests == [{"args": [[5, 4, 1], 2], "expected": [5.0, 4.0]}]
    assert "signature" not in VersionContent.parse(content_data()).canonical()


def test_the_forms_one_line_signature_round_trips_and_bad_lines_say_how_to_write_it():
    text = "(xs: list[list[int]], k: int) -> list[str]"
    parsed = signature_from_text(text)
    assert parsed == {"params": [{"name": "xs", "type": "list[list[int]]"}, {"name": "k", "type": "int"}],
                      "returns": "list[str]"}  # fmt: skip
    assert signature_to_text(parsed) == text
    assert signature_from_text("() -> bool") == {"params": [], "returns": "bool"}
    for bad in ("xs: int -> int", "(xs int) -> int", "(xs: int)"):
        with pytest.raises(SuiteTextError):
            signature_from_text(bad)


@pytest.mark.django_db
def test_the_exported_prompt_declares_the_function_in_the_tasks_language(curator):
    from trainer_bridge.export import _user_prompt

    for language, words in (
        ("java", "public static List<Long> top_k(List<Long> xs, long k)"),
        ("go", "func top_k(xs []int, k int) []int"),
        ("c", "long long *top_k(long long *xs, size_t xs_len, long long k, size_t *out_len)"),
    ):
        prompt = _user_prompt("Statement.", "function_calls", "top_k", "", language, {}, SIGNATURE)
        assert words in prompt and "top_k" in prompt, prompt  # fmt: skip
    # A curator's own starter code is shown as it is.
    assert "mine" in _user_prompt("S.", "function_calls", "top_k", "// mine\n", "go", {}, SIGNATURE)
