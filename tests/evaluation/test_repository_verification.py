"""Verification of repository tasks through the session engine, on the sample task
(tests/tasks_app/repository_sample): the reference patch on every test R times, the empty
patch and the adversarial patch rejected, test-tampering probes rejected, mutants of the
changed functions only, the verdict and flags, a broken reference, a failed sandbox."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Execution, VerificationState
from evaluation.sandbox.sessions import sandbox as session_sandbox
from evaluation.tasks import verify_version
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from evaluation.verification.planning import verification_plan
from evaluation.verification.reaper import verifications_reap
from evaluation.verification.repository import changes, runs
from evaluation.verification.repository.scratch import ScratchRepository
from evaluation.verification.sessions.specs import environment_files
from tasks_app.content import VersionContent
from tasks_app.models import State
from tasks_app.services import task_submit
from tasks_app.services.versions import task_create
from tests.sessions_world import _reachable_directory, _remove
from tests.tasks_app import repository_sample as sample

from .conftest import needs_bwrap
from .workers import wait_for

# Committed for real (the pipeline runs executions on other threads).
pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

CONFIG = VerifyConfig(repeats=2, mutants=6, mutation_seed=0, probes=True, backend="bwrap")
WORDS = "textstats/words.py"
TAMPERING = {"delete_test_files", "trivial_test_files", "conftest_passes_everything", "pytest_ini_deselects",
             "skip_at_import", "exit_at_import"}  # fmt: skip


@pytest.fixture(scope="module")
def environments() -> Iterator[Path]:
    """Prepared environments where the sandboxes' uids reach them (not pytest's tmp_path),
    shared by the module's tests: a version's tree is prepared once."""
    root = _reachable_directory()
    yield root
    _remove(root)


@pytest.fixture(autouse=True)
def sessions_here(settings, environments: Path) -> None:
    settings.SESSIONS = {**settings.SESSIONS, "ENVIRONMENTS_DIR": str(environments), "BACKEND": "bwrap"}


def _submitted(curator, slug: str = "textstats", **overrides):
    task = task_create(
        actor=curator, slug=slug, title=slug, content=VersionContent.parse(sample.content_data(**overrides))
    )
    task_submit(actor=curator, task=task)
    task.refresh_from_db()
    assert task.state == State.SUBMITTED
    return task


def _patch(edits: dict[str, bytes]) -> str:
    """A patch against the sample's tree, made by git from the edited files."""
    files = {path[len("repo/") :]: (data, False) for path, data in sample.members().items() if path.startswith("repo/")}
    with ScratchRepository(files) as scratch:
        for path, data in edits.items():
            scratch.write(path, data)
        return scratch.patch()


def _runs(verification, role: str, subject: str | None = None) -> list[Execution]:
    rows = verification.executions.filter(role=role)
    return list(rows.filter(subject=subject) if subject else rows)


def test_a_sound_repository_task_is_verified_with_every_role(curator):
    task = _submitted(curator)
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)

    assert verification.state == VerificationState.DONE and verification.verdict == "verified", list(
        verification.flags.values_list("code", "message")
    )
    task.refresh_from_db()
    assert task.state == State.VERIFIED
    references = _runs(verification, "reference")
    assert len(references) == CONFIG.repeats and {r.status for r in references} == {"passed"}
    repository = task.latest_version.repository
    every_test = {*repository["fail_to_pass"], *repository["pass_to_pass"]}
    for run in references:
        assert set(run.result["outcomes"]) == every_test  # hidden tests included
        assert {o["outcome"] for o in run.result["outcomes"].values()} == {"passed"}
        assert run.result["reward"] == 1.0 and run.result["patch_applies"] is True
    empty = _runs(verification, "adversarial", "empty patch")
    assert len(empty) == CONFIG.repeats and {r.status for r in empty} == {"failed"}
    outcomes = empty[0].result["outcomes"]
    assert any(outcomes[test]["outcome"] != "passed" for test in repository["fail_to_pass"])
    special = _runs(verification, "adversarial", "special-cases")
    assert len(special) == CONFIG.repeats and {r.status for r in special} == {"failed"}
    probes = {run.subject: run for run in _runs(verification, "probe")}
    assert set(probes) == TAMPERING
    assert {run.status for run in probes.values()} == {"failed"}, {s: r.result["message"] for s, r in probes.items()}
    dropped = {entry["path"] for entry in probes["conftest_passes_everything"].result["dropped"]}
    assert {"conftest.py", "tests/conftest.py"} <= dropped
    mutants = _runs(verification, "mutant")
    assert mutants and any(run.status == "failed" for run in mutants)
    summary = verification.summary
    assert summary["false_negative_rate"]["value"] == 0.0
    assert summary["adversarial_pass_rate"] == {**summary["adversarial_pass_rate"], "successes": 0, "trials": 4}
    assert summary["probe_passes"] == [] and summary["mutation_score"]["value"] == 1.0
    assert summary["runtime"]["time_limit_s"] == 300.0 and summary["runtime"]["samples"] == CONFIG.repeats
    assert not verification.flags.exists()


def test_mutants_change_only_the_functions_the_reference_changes(curator):
    version = _submitted(curator).latest_version
    verification, _ = verification_plan(version=version, config=CONFIG)
    mutants = _runs(verification, "mutant")
    assert mutants
    files = {path: (data, executable) for path, (data, executable) in environment_files(version).items()}
    reference = version.solutions.get(role="reference").code
    with ScratchRepository(files) as scratch:
        scratch.apply(reference)
        patched = scratch.read(WORDS).decode()
        lines = changes.changed_lines(scratch.hunks(WORDS))
        (first, last), *rest = changes.changed_ranges(patched, lines)
        assert not rest and patched.splitlines()[first - 1].startswith("def words(")
        for mutant in mutants:
            scratch.reset()
            scratch.apply(mutant.code)  # a mutant is a whole patch: the reference with its one change
            assert scratch.changed_paths() == [WORDS]
            mutated = scratch.read(WORDS).decode().splitlines()
            original = patched.splitlines()
            assert mutated[: first - 1] == original[: first - 1], mutant.description
            tail = len(original) - last
            assert mutated[len(mutated) - tail :] == original[len(original) - tail :], mutant.description
            assert mutant.description.startswith(f"{WORDS} line ")


# What a harness that trusted pytest's summary would reward: these probes, with the bug
# left in, make a plain pytest run of the task's test files report no failure (exit 0, or
# 5 when every module was skipped).
FOOL_A_PLAIN_PYTEST = ("trivial_test_files", "conftest_passes_everything", "skip_at_import", "exit_at_import")


@pytest.mark.parametrize("name", FOOL_A_PLAIN_PYTEST)
def test_the_tampering_probes_are_real_hacks_a_plain_pytest_run_reports_no_failure_for(curator, name):
    version = _submitted(curator, slug=f"textstats-{name.replace('_', '-')}").latest_version
    verification, _ = verification_plan(version=version, config=CONFIG)
    probe = verification.executions.get(role="probe", subject=name)
    repository = version.repository
    node_ids = [*repository["fail_to_pass"], *repository["pass_to_pass"]]
    with ScratchRepository(environment_files(version)) as scratch:
        scratch.apply(probe.code)
        for path, text in repository["hidden_test_files"].items():
            if scratch.read(path) is None:
                scratch.write(path, text.encode())
        environment = {"PATH": os.environ["PATH"], "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "HOME": str(scratch.root)}
        files = sorted({node_id.split("::")[0] for node_id in node_ids})  # as `pytest tests/` would run them
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
        done = subprocess.run(command, cwd=scratch.root, env=environment, capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode in (0, 5) and "failed" not in said and "error" not in said.lower(), said[-2000:]


def test_planning_twice_adds_nothing(curator):
    version = _submitted(curator).latest_version
    first, todo = verification_plan(version=version, config=CONFIG)
    again, todo_again = verification_plan(version=version, config=CONFIG)
    assert again.pk == first.pk and sorted(todo_again) == sorted(todo) and again.total == first.total


def test_weak_tests_are_flagged_and_the_report_shows_a_surviving_mutants_patch(client, curator):
    words = (sample.SAMPLE_DIR / "repo" / WORDS).read_bytes()
    # The bounds are never reached by a test: mutants of them survive.
    bounded = b"[word for word in text.split() if len(word) > 0 and len(word) < 1000]"
    reference = _patch({WORDS: words.replace(b'text.split(" ")', bounded)})
    adversarial = (sample.SAMPLE_DIR / "patches" / "adversarial" / "special-cases.diff").read_text()
    solutions = [{"role": "reference", "label": "reference", "code": reference},
                 {"role": "adversarial", "label": "special-cases", "code": adversarial}]  # fmt: skip
    task = _submitted(curator, slug="textstats-weak", solutions=solutions)
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)

    assert {r.status for r in _runs(verification, "reference")} == {"passed"}
    assert "WEAK_TESTS" in set(verification.flags.values_list("code", flat=True))
    survivors = verification.summary["surviving_mutants"]
    assert survivors and verification.summary["mutation_score"]["value"] < 0.8
    client.force_login(curator)
    page = client.get(reverse("verification:report", args=[task.slug, 1]))
    assert page.status_code == 200
    shown = page.context["mutants"]
    assert {item["execution"].subject for item in shown} == set(survivors)
    assert all(item["diff"] == item["execution"].code for item in shown)  # the mutant's whole patch
    html = page.content.decode()
    assert "diff --git a/textstats/words.py b/textstats/words.py" in html and "WEAK_TESTS" in html


def test_a_reference_that_does_not_fix_the_bug_gets_reference_fails(client, curator):
    words = (sample.SAMPLE_DIR / "repo" / WORDS).read_bytes()
    no_fix = _patch({WORDS: words.replace(b"and what can be counted", b"and what is counted")})
    solutions = [{"role": "reference", "label": "reference", "code": no_fix}]
    task = _submitted(curator, slug="textstats-broken", solutions=solutions)
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)

    assert verification.verdict == "flagged"
    codes = set(verification.flags.values_list("code", flat=True))
    assert "REFERENCE_FAILS" in codes
    failed = _runs(verification, "reference")[0]
    assert failed.status == "failed"
    outcomes = failed.result["outcomes"]
    assert outcomes["tests/test_whitespace.py::test_counts_words_across_newlines_and_tabs"]["outcome"] == "failed"
    assert outcomes["tests/test_words.py::test_counts_words_separated_by_single_spaces"]["outcome"] == "passed"
    task.refresh_from_db()
    assert task.state == State.FLAGGED
    client.force_login(curator)
    page = client.get(reverse("verification:report", args=[task.slug, 1]))
    failed_references = page.context["failed_references"]
    assert len(failed_references) == CONFIG.repeats
    assert {t["name"] for t in failed_references[0]["tests"]} == set(outcomes)
    html = page.content.decode()
    assert "Reference runs that failed" in html and "REFERENCE_FAILS" in html
    assert "tests/test_whitespace.py::test_counts_words_across_newlines_and_tabs" in html


def test_a_setup_command_that_fails_is_the_tasks_fault_broken_setup(curator):
    setup = ["python -m compileall -q textstats", "echo the mirror is down >&2; exit 3"]
    task = _submitted(curator, slug="textstats-setup", repository={"setup_commands": setup})
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)

    assert verification.state == VerificationState.DONE and verification.verdict == "flagged"
    flags = {flag.code: flag for flag in verification.flags.all()}
    assert {"BROKEN_SETUP", "REFERENCE_FAILS"} <= set(flags)
    assert "the mirror is down" in flags["BROKEN_SETUP"].details["traceback"]
    assert "sandbox_error" not in set(verification.executions.values_list("status", flat=True))


def test_a_failed_sandbox_is_a_sandbox_error_not_a_failure(curator, monkeypatch):
    task = _submitted(curator, slug="textstats-nosandbox")
    runs.prepared_environment(task.latest_version)  # the tree is ready; the session's sandbox is what fails
    monkeypatch.setattr(session_sandbox, "bwrap_path", lambda: None)
    verification = verification_run_inline(version=task.latest_version, config=CONFIG)

    assert verification.state == VerificationState.INFRASTRUCTURE_ERROR and verification.verdict == ""
    statuses = set(verification.executions.values_list("status", flat=True))
    assert statuses == {"sandbox_error"}
    run = _runs(verification, "reference")[0]
    assert run.result["anomaly"] == "backend_missing"
    assert not verification.flags.exists()
    task.refresh_from_db()
    assert task.state == State.SUBMITTED


def test_a_patch_that_does_not_apply_fails_the_patch(curator):
    version = _submitted(curator, slug="textstats-badpatch").latest_version
    garbage = (
        "diff --git a/textstats/words.py b/textstats/words.py\n--- a/textstats/words.py\n"
        "+++ b/textstats/words.py\n@@ -1,1 +1,1 @@\n-no such line\n+x\n"
    )
    outcome = runs.repository_run(version=version, code=garbage)
    assert outcome["status"] == "failed"
    assert outcome["result"]["patch_applies"] is False and "does not apply" in outcome["result"]["message"]


def test_manage_py_verify_sync_verifies_a_repository_task(curator):
    task = _submitted(curator, slug="textstats-cli")
    out = io.StringIO()
    call_command(
        "verify", "--task", task.slug, "--sync", "--repeats", "1", "--mutants", "2", stdout=out, stderr=io.StringIO()
    )
    assert f"{task.latest_version}: verified [-]" in out.getvalue()
    verification = task.latest_version.verifications.get()
    assert verification.executions.filter(role="probe").count() == len(TAMPERING)
    task.refresh_from_db()
    assert task.state == State.VERIFIED


def test_the_reaper_resumes_a_repository_verification_with_a_deadline_of_sessions(curator):
    version = _submitted(curator, slug="textstats-reaped").latest_version
    verification, todo = verification_plan(version=version, config=CONFIG)
    later = timezone.now() + timedelta(days=30)
    resumed = dict(verifications_reap(now=later))
    assert sorted(resumed[verification.pk]) == sorted(todo)
    verification.refresh_from_db()
    # Each execution is a session: the patch's two steps and two tries of a 300 s verdict.
    per_execution = 2 * 300.0 + 2 * 30.0 + 5.0
    assert (verification.deadline_at - later).total_seconds() == pytest.approx(600.0 + len(todo) * per_execution)


def test_the_celery_path_verifies_a_repository_task(curator, workers, environments):
    workers.start("w1@host-a", SESSION_ENVIRONMENTS_DIR=str(environments))
    task = _submitted(curator, slug="textstats-celery")
    verify_version.delay(task.latest_version_id)

    def finished():
        found = task.latest_version.verifications.first()
        return found if found is not None and found.state == VerificationState.DONE else None

    verification = wait_for(finished, timeout=180, what="the repository verification to finish")
    assert verification.verdict == "verified", (verification.summary, workers.logs())
    statuses = set(verification.executions.values_list("status", flat=True))
    assert statuses <= {"passed", "failed"} and verification.done == verification.total
    assert {e.worker for e in verification.executions.all()} == {"w1@host-a"}
    task.refresh_from_db()
    assert task.state == State.VERIFIED
