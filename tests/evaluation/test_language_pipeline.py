"""A task in another language than Python through verification and the content rules:
its reference passes on every repeat, a wrong program fails, a reference that does
not compile makes the task broken rather than a sandbox error, and the content
refuses what these languages cannot do yet, saying where."""

from __future__ import annotations

import pytest

from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.models import Task
from tasks_app.services import task_submit
from tests.factories import content_data, make_task

from .conftest import needs_bwrap
from .language_samples import BROKEN, SUM, SUM_CASES

CONFIG = VerifyConfig(repeats=2, mutants=10, probes=True, backend="bwrap", inputs=0)


def stdio_content(language: str, reference: str, **extra) -> dict:
    return content_data(
        suite_kind="stdio", language=language, entry_point="", starter_code="", test_setup="",
        visible_tests=SUM_CASES[:1], hidden_tests=SUM_CASES[1:],
        solutions=[{"role": "reference", "label": "ref", "code": reference},
                   {"role": "adversarial", "label": "silent", "code": "int main(void) { return 0; }\n"}],
        **extra,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@needs_bwrap
@pytest.mark.parametrize(("language", "reference", "reference_status"),
                         [("c", SUM["c"], "passed"), ("c", BROKEN["c"], "compile_error")])  # fmt: skip
def test_a_c_task_verifies_with_its_reference_and_wrong_program(curator, language, reference, reference_status):
    task = make_task(owner=curator, slug="sum-" + reference_status.replace("_", "-"),
                     **{k: v for k, v in stdio_content(language, reference).items() if k != "statement"})  # fmt: skip
    task_submit(actor=curator, task=task)
    task = Task.objects.get(pk=task.pk)
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)
    runs = {(e.role, e.status) for e in verification.executions.all()}
    assert ("reference", reference_status) in runs and ("adversarial", "failed") in runs, runs
    # A C task's mutants change its reference's tokens (mutants/tokens.py); its probes
    # are C's, and none earns the reward.
    mutants = list(verification.executions.filter(role="mutant").values_list("status", flat=True))
    assert "sandbox_error" not in mutants and (mutants or reference_status == "compile_error"), mutants
    probes = {e.subject: e.status for e in verification.executions.filter(role="probe")}
    assert set(probes) == {"exit_before_main", "print_sample_output", "read_answer_file", "write_outside_scratch",
                           "spin_forever", "allocate_forever"}, probes  # fmt: skip
    assert "passed" not in probes.values(), probes
    assert not verification.executions.filter(status="sandbox_error").exists()
    if reference_status == "compile_error":
        assert verification.flags.filter(code="REFERENCE_FAILS").exists(), list(verification.flags.values("code"))


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"language": "cobol"}, "language", "Unknown"),
        ({"suite_kind": "check_function", "entry_point": "main"}, "language", "stdio"),
        ({"comparator": {"mode": "fuzzy"}}, "comparator.mode", "Unknown mode"),
        ({"comparator": {"mode": "tokens", "abs_tol": 0.1}}, "comparator.abs_tol", "only for mode 'float'"),
        ({"comparator": {"mode": "float", "rel_tol": -1}}, "comparator.rel_tol", "0 or more"),
        ({"comparator": {"mode": "float", "rel_tol": True}}, "comparator.rel_tol", "0 or more"),
        ({"comparator": {"mode": "lines", "case": "ignore"}}, "comparator.case", "Unknown field"),
        ({"comparator": "tokens"}, "comparator", "Expected an object"),
    ],
)
def test_bad_language_content_is_refused_naming_the_field(changes, path, words):
    data = {**stdio_content("java", SUM["java"]), **changes}
    with pytest.raises(ValidationFailed) as caught:
        VersionContent.parse(data)
    messages = caught.value.details.get(path, [])
    assert any(words in m for m in messages), caught.value.details


def test_another_language_is_not_parsed_as_python_and_its_comparator_is_hashed_only_when_set():
    plain = VersionContent.parse(stdio_content("java", SUM["java"]))
    assert plain.language == "java" and plain.comparator == {} and "comparator" not in plain.canonical()
    tokens = VersionContent.parse(stdio_content("java", SUM["java"], comparator={"mode": "tokens"}))
    assert tokens.canonical()["comparator"] == {"mode": "tokens"}
    assert tokens.content_hash() != plain.content_hash()
    with pytest.raises(ValidationFailed):  # a comparator belongs to stdio tasks only
        VersionContent.parse({**content_data(), "comparator": {"mode": "tokens"}})
