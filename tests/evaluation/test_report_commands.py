"""manage.py verification_report and manage.py humaneval_audit, against the real bwrap sandbox."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import Execution, Flag, Verification, VerificationState
from evaluation.verification.audit.rows import ROW_FIELDS
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import State, Task
from tasks_app.roles import CURATOR
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap

# Committed for real (executions run on threads with their own connections); serialized
# rollback puts the seeded rows back for the tests after.
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

QUICK = VerifyConfig(repeats=2, mutants=4, mutation_seed=0, probes=False, backend="bwrap")
CLAMP = """\
def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x
"""


def _verified_clamp(owner, *, slug="clamp", tests=(-5, 0, 5, 10, 50)):
    task = make_task(
        owner=owner,
        slug=slug,
        title="Clamp",
        tags=["report"],
        entry_point="clamp",
        statement="Clamp x into [low, high].",
        starter_code="def clamp(x, low, high):\n    ...\n",
        visible_tests=["assert clamp(3, 0, 10) == 3"],
        hidden_tests=[f"assert clamp({v}, 0, 10) == {min(max(v, 0), 10)}" for v in tests],
        solutions=[{"role": "reference", "label": "ref", "code": CLAMP}],
        time_limit_s=2,
    )
    task_submit(actor=owner, task=task)
    return verification_run_inline(version=task.latest_version, config=QUICK)


def _report(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("verification_report", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_json_report_is_a_list_with_the_figures_of_each_version(curator):
    verification = _verified_clamp(curator)
    text, _ = _report("--task", "clamp", "--format", "json")

    rows = json.loads(text)
    assert isinstance(rows, list) and len(rows) == 1
    row = rows[0]
    assert tuple(row) == ROW_FIELDS
    version, summary = verification.version, verification.summary
    assert (row["slug"], row["version"], row["content_hash"]) == ("clamp", version.number, version.content_hash)
    assert row["verdict"] == verification.verdict and row["config_hash"] == verification.config_hash
    assert row["flags"] == sorted(verification.flags.values_list("code", flat=True))
    assert row["mutation_score"] == summary["mutation_score"]["value"]
    assert (row["mutants_killed"], row["mutants_counted"]) == (
        summary["mutation_score"]["successes"],
        summary["mutation_score"]["trials"],
    )
    assert row["surviving_mutants"] == len(summary["surviving_mutants"])
    assert row["reference_false_negative_rate"] == 0.0 and row["adversarial_pass_rate"] is None
    assert row["reward_noise_low"] <= row["reward_noise"] <= row["reward_noise_high"]
    assert row["reference_p95_s"] == summary["runtime"]["p95"] and row["headroom"] == summary["runtime"]["headroom"]
    assert row["executions_total"] == verification.total == Execution.objects.count()
    assert row["excluded_sandbox_errors"] == 0
    assert text.startswith("[\n  {")  # indent 2


def test_the_csv_report_has_a_header_and_one_row_per_version(curator, tmp_path):
    first = _verified_clamp(curator, slug="clamp")
    _verified_clamp(curator, slug="weak-clamp", tests=(5,))  # too few tests: flags to join
    path = tmp_path / "report.csv"
    _, err = _report("--tag", "report", "--format", "csv", "--output", str(path))

    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == list(ROW_FIELDS)
    assert [r[0] for r in rows[1:]] == ["clamp", "weak-clamp"]
    by_slug = {r[0]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    weak = Verification.objects.get(version__task__slug="weak-clamp")
    assert by_slug["weak-clamp"]["flags"] == ";".join(sorted(weak.flags.values_list("code", flat=True)))
    assert "TOO_FEW_TESTS" in by_slug["weak-clamp"]["flags"].split(";")
    assert by_slug["clamp"]["adversarial_pass_rate"] == ""  # no adversarial solution: no rate, not 0
    assert float(by_slug["clamp"]["mutation_score"]) == first.summary["mutation_score"]["value"]
    assert "Wrote 2 row(s)" in err


def test_a_version_without_a_finished_verification_is_left_out_and_named(curator):
    _verified_clamp(curator)
    make_task(owner=curator, slug="never-verified", tags=["report"])
    text, err = _report("--tag", "report")  # --format json is the default
    assert [row["slug"] for row in json.loads(text)] == ["clamp"]
    assert "never-verified" in err


def test_a_bad_format_or_an_unknown_selection_is_a_command_error(curator):
    make_task(owner=curator, slug="present")
    with pytest.raises(CommandError, match=r"Unknown format 'xml': use one of json, csv"):
        _report("--format", "xml")
    with pytest.raises(CommandError, match=r"No task matches task 'missing'"):
        _report("--task", "missing", "--format", "csv")
    with pytest.raises(CommandError, match=r"No task matches tag 'nothing-here'"):
        _report("--tag", "nothing-here")


def test_the_humaneval_audit_writes_a_report_that_matches_the_database(tmp_path):
    output = tmp_path / "audit.md"
    call_command(
        "humaneval_audit", "--limit", "3", "--repeats", "1", "--mutants", "4", "--output", str(output),
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    text = output.read_text()

    tasks = Task.objects.filter(tags__name="humaneval").order_by("slug")
    assert [t.slug for t in tasks] == ["humaneval-0", "humaneval-1", "humaneval-2"]
    assert all(t.state in (State.VERIFIED, State.FLAGGED) for t in tasks)  # submitted, then decided
    assert tasks[0].owner.username == "auditor" and tasks[0].owner.groups.filter(name=CURATOR).exists()
    verifications = list(Verification.objects.all())
    assert len(verifications) == 3 and all(v.state == VerificationState.DONE for v in verifications)
    assert {v.config["repeats"] for v in verifications} == {1} and {v.config["mutants"] for v in verifications} == {4}

    for heading in (
        "## Summary",
        "## Reference solutions: pass rate and flakiness",
        "## Mutation scores",
        "## Tasks flagged WEAK_TESTS",
        "## Exploit probes",
        "## Flags",
        "## Reward noise",
        "## Runtime",
        "## Comparison with published findings",
    ):
        assert heading in text
    assert "python manage.py humaneval_audit" in text and "--limit 3" in text
    assert f"`{verifications[0].config_hash}`" in text and f"`{verifications[0].config['harness']}`" in text
    assert f"{os.cpu_count()} CPU core(s)" in text

    executions = Execution.objects.all()
    references = executions.filter(role="reference")
    passed = references.filter(status="passed").count()
    assert f"| Executions | {executions.count()} |" in text
    assert f"| Reference runs passed | {passed} of {references.count()} (" in text
    mutants = executions.filter(role="mutant")
    surviving = mutants.filter(status="passed").count()
    assert f"| Mutants surviving (pooled) | {surviving} of {mutants.count()} (" in text
    section = text[text.index("## Mutation scores") : text.index("## Tasks flagged WEAK_TESTS")]
    histogram = [int(n) for n in re.findall(r"^\| \[\d+%, \d+%[)\]] \| (\d+) \|$", section, flags=re.M)]
    assert len(histogram) == 10 and sum(histogram) == 3  # every task had mutants
    for (code, severity), count in Counter(Flag.objects.values_list("code", "severity")).items():
        assert f"| {code} | {severity} | {count} |" in text
    weak = Flag.objects.filter(code="WEAK_TESTS").count()
    assert f"| Tasks flagged WEAK_TESTS | {weak} |" in text
    probes = executions.filter(role="probe")
    assert probes.exists()
    for name in set(probes.values_list("subject", flat=True)):  # one row each: tasks run on, tasks passed on
        runs = probes.filter(subject=name)
        assert f"| `{name}` | {runs.count()} | {runs.filter(status='passed').count()} |" in text

    rows = Execution.objects.count()
    call_command(
        "humaneval_audit", "--limit", "3", "--repeats", "1", "--mutants", "4", "--output", str(output),
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    assert Execution.objects.count() == rows and Verification.objects.count() == 3  # imported and verified once
    assert f"| Executions | {rows} |" in output.read_text()
