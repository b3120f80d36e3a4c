"""Solver rollouts end to end on the real bwrap sandbox: a samples file in,
attempts run, pass@k per task and solver, and a difficulty fit kept per run."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.difficulty.fits import difficulty_bands, difficulty_fit_create
from evaluation.difficulty.rollouts import samples_ingest, upload_run_inline
from evaluation.difficulty.samples import SamplesError
from evaluation.difficulty.selectors import attempt_counts, pass_at_k_rows
from evaluation.models import Attempt, DifficultyFit, SampleUpload, Solver
from tests.factories import make_task

from .conftest import needs_bwrap

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

RIGHT = "    return a + b\n"
WRONG = "    return a - b\n"
FENCED = "Sure:\n```python\ndef add(a, b):\n    return b + a\n```\n"


def _jsonl(rows: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


@pytest.fixture
def tasks(curator):
    return [make_task(owner=curator, slug="add-two"), make_task(owner=curator, slug="add-three", title="Add again")]


def test_a_file_of_samples_runs_and_gives_pass_at_k_per_task_and_solver(tasks):
    rows = [{"task_id": "add-two", "completion": c} for c in (RIGHT, RIGHT, WRONG, FENCED, RIGHT)]
    rows += [{"task_id": "Add-Three", "completion": WRONG, "solver": "weak"} for _ in range(5)]
    ingested = samples_ingest(data=_jsonl(rows), solver="strong", filename="samples.jsonl")
    upload = ingested.upload
    assert (upload.samples, upload.created, upload.total, ingested.skipped) == (10, 10, 10, 0)
    assert set(Solver.objects.values_list("name", flat=True)) == {"strong", "weak"}

    upload = upload_run_inline(upload=upload, workers=2)
    assert upload.done == 10 and upload.finished_at is not None
    statuses = dict(Attempt.objects.filter(solver__name="strong").values_list("sample_id", "status"))
    assert statuses == {"0": "passed", "1": "passed", "2": "failed", "3": "passed", "4": "passed"}

    table = {(r["task"], r["solver"]): r for r in pass_at_k_rows()}
    strong = table[("add-two", "strong")]
    assert (strong["attempts"], strong["passes"]) == (5, 4)
    at = {p["k"]: p for p in strong["pass_at_k"]}
    assert at[1]["value"] == pytest.approx(0.8) and at[5]["value"] == 1.0 and at[10]["value"] is None
    assert at[1]["low"] < 0.8 < at[1]["high"]
    assert table[("add-three", "weak")]["passes"] == 0


def test_the_same_file_again_adds_nothing_and_overlaps_are_skipped(tasks):
    rows = [{"task_id": "add-two", "completion": RIGHT, "sample_id": f"s{i}"} for i in range(3)]
    first = samples_ingest(data=_jsonl(rows), solver="m")
    again = samples_ingest(data=_jsonl(rows), solver="m")
    assert again.repeated and again.upload.pk == first.upload.pk and Attempt.objects.count() == 3
    extra = {"task_id": "add-two", "completion": WRONG, "sample_id": "s9"}
    more = samples_ingest(data=_jsonl([*rows, extra]), solver="m")
    assert not more.repeated and more.upload.created == 1 and more.skipped == 3 and Attempt.objects.count() == 4


def test_a_bad_line_rejects_the_whole_file_and_stores_nothing(tasks):
    rows = [{"task_id": "add-two", "completion": RIGHT}, {"task_id": "no-such-task", "completion": RIGHT}]
    with pytest.raises(SamplesError, match="line 2: no task 'no-such-task'"):
        samples_ingest(data=_jsonl(rows), solver="m")
    with pytest.raises(SamplesError, match="line 1: no solver"):
        samples_ingest(data=_jsonl(rows[:1]))
    assert not SampleUpload.objects.exists() and not Attempt.objects.exists() and not Solver.objects.exists()


def test_a_sandbox_error_is_never_counted_as_a_failure(tasks, monkeypatch):
    from evaluation.sandbox import engine

    data = _jsonl([{"task_id": "add-two", "completion": RIGHT} for _ in range(3)])
    upload = samples_ingest(data=data, solver="m").upload
    monkeypatch.setenv("SANDBOX_PYTHON", "/nonexistent/python3")  # every sandbox fails to start
    engine.close_pools()
    upload = upload_run_inline(upload=upload, workers=1)
    assert set(upload.attempts.values_list("status", flat=True)) == {"sandbox_error"}
    assert upload.done == 0 and upload.finished_at is None
    assert attempt_counts() == []  # neither an attempt nor a failure

    monkeypatch.delenv("SANDBOX_PYTHON")
    engine.close_pools()
    upload = upload_run_inline(upload=upload, workers=1)  # running it again retries them
    assert upload.done == 3 and attempt_counts() == [{"task": "add-two", "solver": "m", "attempts": 3, "passes": 3}]


def test_fits_are_kept_and_bands_read_against_a_solver(tasks):
    rows = [{"task_id": "add-two", "completion": RIGHT, "solver": "strong"} for _ in range(4)]
    rows += [{"task_id": "add-three", "completion": c, "solver": "strong"} for c in (RIGHT, WRONG, RIGHT, WRONG)]
    rows += [{"task_id": "add-two", "completion": c, "solver": "weak"} for c in (RIGHT, WRONG, WRONG, WRONG)]
    rows += [{"task_id": "add-three", "completion": WRONG, "solver": "weak"} for _ in range(4)]
    upload_run_inline(upload=samples_ingest(data=_jsonl(rows)).upload, workers=2)

    first = difficulty_fit_create(bootstrap=20, seed=1)
    assert first.state == "done" and (first.tasks, first.solvers, first.attempts) == (2, 2, 16)
    assert first.difficulties["add-three"]["value"] > first.difficulties["add-two"]["value"]
    assert first.abilities["strong"]["value"] > first.abilities["weak"]["value"]
    assert first.difficulties["add-two"]["attempts"] == 8
    # Two measured tasks are too few to learn from: nothing predicted, and the reason is on record.
    assert first.predicted == {} and first.predictor["trained_on"] == 2 and first.predictor["cv_mae"] is None
    low, high = first.difficulties["add-two"]["low"], first.difficulties["add-two"]["high"]
    assert low <= first.difficulties["add-two"]["value"] <= high
    again = difficulty_fit_create(bootstrap=20, seed=1)
    assert again.pk != first.pk and again.data_digest == first.data_digest
    assert again.difficulties == first.difficulties  # same data, same parameters: the same fit
    assert DifficultyFit.objects.count() == 2

    bands = difficulty_bands(first, solver="strong")
    assert bands["add-two"]["expected_pass_rate"] > bands["add-three"]["expected_pass_rate"]
    with pytest.raises(ValueError, match="solver 'nobody' is not in fit"):
        difficulty_bands(first, solver="nobody")


def test_a_fit_without_attempts_fails_with_its_reason(db):
    fit = difficulty_fit_create(bootstrap=0)
    assert fit.state == "failed"
    assert fit.error.startswith("too little data to fit: 0 task(s) and 0 counted attempt(s); a fit needs at least 2")


def test_the_commands_ingest_run_and_fit(tasks, tmp_path, capsys):
    small = tmp_path / "small.jsonl"
    small.write_bytes(_jsonl([{"task_id": "add-two", "completion": c} for c in (RIGHT, WRONG, "")]))
    call_command("ingest_samples", str(small), "--solver", "cli-model", "--sync", "--workers", "1")
    out = capsys.readouterr().out
    assert "3 attempt(s) added" in out and "Ran 3/3: 1 passed" in out  # an empty completion fails
    assert "Difficulty not fitted: too little data to fit: 1 task(s) and 3 counted attempt(s)" in out
    with pytest.raises(CommandError, match="too little data to fit"):
        call_command("fit_difficulty", "--bootstrap", "5")

    path = tmp_path / "samples.jsonl"
    path.write_bytes(_jsonl([{"task_id": t, "completion": c} for t in ("add-two", "add-three")
                             for c in (RIGHT, WRONG, RIGHT, RIGHT, WRONG)]))  # fmt: skip
    call_command("ingest_samples", str(path), "--solver", "cli-model", "--sync")
    out = capsys.readouterr().out
    assert "7 attempt(s) added, 3 already present" in out and "Difficulty fit" in out  # add-two's 0-2 were there
    call_command("ingest_samples", str(path), "--solver", "cli-model", "--sync")
    assert "Already ingested" in capsys.readouterr().out
    call_command("fit_difficulty", "--bootstrap", "5")
    assert "2 task(s), 1 solver(s), 10 attempt(s)" in capsys.readouterr().out

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "add-two", "completion": "x"}\n{oops}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl: line 2: not valid JSON .* \(nothing was stored\)"):
        call_command("ingest_samples", str(bad), "--solver", "m")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("ingest_samples", str(tmp_path / "missing.jsonl"), "--solver", "m")
    with pytest.raises(CommandError, match="--bootstrap must be 0 or more"):
        call_command("fit_difficulty", "--bootstrap", "-1")


def test_bands_become_flags_that_say_why_and_the_next_fit_replaces_them(tasks, settings):
    from evaluation.difficulty.fits import _flag_bands
    from evaluation.models import TaskFlag

    settings.DIFFICULTY = {**settings.DIFFICULTY, "TARGET_SOLVER": "mid"}
    fit = DifficultyFit.objects.create(
        state="done",
        abilities={"mid": {"value": 0.0, "low": -0.5, "high": 0.5}},
        difficulties={
            "add-two": {"value": -4.0, "low": -5, "high": -3},
            "add-three": {"value": 4.0, "low": 3, "high": 5},
        },
    )
    _flag_bands(fit)
    easy, hard = TaskFlag.objects.get(task__slug="add-two"), TaskFlag.objects.get(task__slug="add-three")
    assert (easy.code, hard.code) == ("TOO_EASY", "TOO_HARD") and easy.severity == "warning"
    assert "solver mid" in easy.message and "98%" in easy.message and "all pass" in easy.message
    assert "2%" in hard.message and easy.fit == fit

    fit.difficulties = {
        "add-two": {"value": 0.0, "low": -1, "high": 1},
        "add-three": {"value": 0.5, "low": 0, "high": 1},
    }
    fit.save()
    _flag_bands(fit)  # both now in the learnable zone: the flags go
    assert not TaskFlag.objects.filter(code__in=["TOO_EASY", "TOO_HARD"]).exists()
