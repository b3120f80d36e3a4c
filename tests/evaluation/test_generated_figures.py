"""The generated inputs' per-task figures where verification results are listed: the
rows `manage.py verification_report` writes, the audit's figures and Markdown, and the
analytics download."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from evaluation.difficulty import analytics
from evaluation.models import Verification
from evaluation.verification.audit import audit_figures, audit_markdown
from evaluation.verification.audit.rows import ROW_FIELDS, verification_row, verification_rows
from evaluation.verification.generated.decisions import proposed_tests_accept_ids
from tests.evaluation.generated_world import proposals_of, weak_verification
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def test_a_row_counts_proven_survivors_equivalence_and_tests_proposed_and_accepted(curator):
    verification = weak_verification(curator)
    row = verification_row(verification)
    assert tuple(row) == ROW_FIELDS
    assert row["surviving_mutants"] == 2 and row["mutation_score"] == 0.5
    assert (row["proven_weak_survivors"], row["probably_equivalent_survivors"]) == (1, 1)
    assert row["equivalence_share"] == 0.5 and row["mutation_score_nonequivalent"] == pytest.approx(2 / 3)
    assert (row["generated_tests_proposed"], row["generated_tests_accepted"]) == (1, 0)
    proposed_tests_accept_ids(actor=curator, ids=[proposals_of(verification)[0].pk])
    (again,) = verification_rows([Verification.objects.get(pk=verification.pk)])
    assert (again["generated_tests_proposed"], again["generated_tests_accepted"]) == (1, 1)


def test_without_generated_inputs_the_figures_are_unknown_not_zero(curator):
    task = make_task(owner=curator, slug="never-explored")
    verification = Verification.objects.create(
        version=task.latest_version, config_hash="x", config={}, state="done",
        summary={"mutation_score": {"value": 1.0, "successes": 3, "trials": 3}, "surviving_mutants": []},
    )  # fmt: skip
    row = verification_row(verification)
    assert row["proven_weak_survivors"] is None and row["generated_tests_proposed"] is None
    assert row["equivalence_share"] is None and row["mutation_score_nonequivalent"] is None


def test_the_report_command_writes_them_as_json_and_csv(curator):
    weak_verification(curator, slug="weak-one")
    out = io.StringIO()
    call_command("verification_report", "--task", "weak-one", stdout=out, stderr=io.StringIO())
    (row,) = json.loads(out.getvalue())
    assert (row["proven_weak_survivors"], row["generated_tests_proposed"], row["equivalence_share"]) == (1, 1, 0.5)
    out = io.StringIO()
    call_command("verification_report", "--task", "weak-one", "--format", "csv", stdout=out, stderr=io.StringIO())
    header, line = list(csv.reader(io.StringIO(out.getvalue())))
    by_name = dict(zip(header, line, strict=True))
    assert by_name["proven_weak_survivors"] == "1" and by_name["generated_tests_accepted"] == "0"
    assert by_name["probably_equivalent_survivors"] == "1" and by_name["equivalence_share"] == "0.5"


def test_the_audit_figures_and_markdown_count_them(curator):
    first = weak_verification(curator, slug="first")
    second = weak_verification(curator, slug="second")
    proposed_tests_accept_ids(actor=curator, ids=[proposals_of(second)[0].pk])
    versions = [first.version, second.version]
    for verification in (first, second):
        Verification.objects.filter(pk=verification.pk).update(config_hash="audit")
    figures = audit_figures(versions=versions, config_hash="audit")
    generated = figures["generated"]
    assert (generated["tasks_judged"], generated["survivors"], generated["proven_weak"]) == (2, 4, 2)
    assert (generated["probably_equivalent"], generated["equivalence_share"]) == (2, 0.5)
    assert (generated["inputs_generated"], generated["inputs_valid"]) == (400, 300)
    assert (generated["tests_proposed"], generated["tests_accepted"]) == (2, 1)
    assert [row["slug"] for row in generated["tasks"]] == ["first", "second"]
    assert generated["tasks"][1]["accepted"] == 1
    figures["config"] = {"repeats": 1, "mutants": 4, "mutation_seed": 0, "probes": True, "backend": "bwrap"}
    text = audit_markdown(figures, command="test", generated_at="now", cores=1, dataset="rows")
    assert "| Survivors proven wrong on generated inputs | 2 (in 2 tasks) |" in text
    section = text[text.index("## Generated inputs") : text.index("## Exploit probes")]
    assert "Of 4 surviving mutants, 2 are proven wrong" in section and "equivalence share 50.0%" in section
    assert "| `second` | 1 | 1 | 50.0% | 66.7% | 1 | 1 |" in section


def test_the_analytics_download_carries_them_per_task(curator):
    weak_verification(curator, slug="weak-one")
    frame = analytics.chart_frame("mutation", analytics.Filters())
    (row,) = frame.to_dict("records")
    assert row["task"] == "weak-one" and row["mutation_score"] == 0.5
    assert (row["proven_weak_survivors"], row["generated_tests_proposed"], row["equivalence_share"]) == (1, 1, 0.5)
