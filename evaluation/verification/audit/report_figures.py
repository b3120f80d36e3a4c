"""Every figure of the audit report, read back from the database: the verifications of
the audited versions under one configuration, their flags and their executions.

Nothing is carried over from the run, so the report says what the database holds
when it is written. `audit_figures` returns plain data (the report renders it, and
it can be dumped as JSON); each section of the report has its own helper here.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from evaluation.models import Execution, Flag, Verification, VerificationState
from evaluation.verification import figures
from evaluation.verification.flags import count_checks, thresholds
from evaluation.verification.generated.selectors import JUDGED, proposal_counts
from tasks_app.models import TaskVersion

NOISE_BINS = ((0.0, 0.01), (0.01, 0.02), (0.02, 0.05), (0.05, 0.10), (0.10, 0.20), (0.20, 0.50), (0.50, 1.0))

Summaries = dict[int, dict[str, Any]]  # verification id -> its summary
Slugs = dict[int, str]  # verification id -> its task's slug


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
    weak, flags = _flag_figures(done_ids, summaries, slug_of)
    probes, hackable_tasks = _probe_figures(done_ids, slug_of)
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
        "reference": _reference_figures(done_ids, summaries, slug_of),
        "flaky": _flaky_figures(summaries, slug_of),
        "mutation": _mutation_figures(done_ids, summaries, slug_of, done=len(done)),
        "timeouts": _timeout_figures(done_ids),
        "checks": _check_figures(done),
        "weak_tests": weak,
        "generated": _generated_figures(summaries, slug_of),
        "probes": probes,
        "hackable_tasks": hackable_tasks,
        "flags": flags,
        "noise": _noise_figures(summaries),
        "runtime": _runtime_figures(done, done_ids, summaries, slug_of),
    }


def _decile(killed: int, counted: int) -> int:
    # Integer arithmetic: 7/10 must land in the 70-80% bin, whatever the float rounding.
    return min(killed * 10 // counted, 9)


def _reference_figures(done_ids: list[int], summaries: Summaries, slug_of: Slugs) -> dict[str, Any]:
    """Reference runs: how many failed, and how, task by task."""
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
    return {
        "failed": ref_failed,
        "runs": ref_runs,
        "failure_rate": figures.rate(ref_failed, ref_runs).as_dict(),
        "tasks_failing": reference_failures,
    }


def _flaky_figures(summaries: Summaries, slug_of: Slugs) -> dict[str, Any]:
    flaky = [
        {"slug": slug_of[pk], "subjects": [f"{f['role']}:{f['subject']}" for f in s.get("flaky_subjects") or []]}
        for pk, s in summaries.items()
        if s.get("flaky_subjects")
    ]
    flake_judged = sum(1 for s in summaries.values() if (s.get("flake_rate") or {}).get("trials"))
    return {"tasks": flaky, "judged": flake_judged}


def _mutation_figures(done_ids: list[int], summaries: Summaries, slug_of: Slugs, *, done: int) -> dict[str, Any]:
    """Mutation scores: their spread over tasks, pooled, and how the mutants ended."""
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
    return {
        "tasks_scored": len(scored),
        "tasks_without_mutants": done - len(scored),
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
    }


def _timeout_figures(done_ids: list[int]) -> dict[str, dict[str, Any]]:
    """Where runs were stopped, by role: that tells which wall time each ran under (the caps of the service)."""
    stopped_after = defaultdict(list)
    for role, wall_s in Execution.objects.filter(verification_id__in=done_ids, status="timeout").values_list(
        "role", "wall_s"
    ):
        stopped_after[role].append(wall_s or 0.0)
    return {
        role: {"count": len(walls), "min_s": min(walls), "median_s": statistics.median(walls), "max_s": max(walls)}
        for role, walls in sorted(stopped_after.items())
    }


def _check_figures(done: list[Verification]) -> dict[str, Any]:
    """Checks per task, as the flags count them."""
    checks = [count_checks(v.version) for v in done]
    return {
        "mean": statistics.fmean(checks) if checks else None,
        "median": statistics.median(checks) if checks else None,
        "min": min(checks) if checks else None,
        "max": max(checks) if checks else None,
        "below_minimum": sum(1 for n in checks if n < thresholds()["MIN_TESTS"]),
        "minimum": thresholds()["MIN_TESTS"],
    }


def _flag_figures(
    done_ids: list[int], summaries: Summaries, slug_of: Slugs
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the tasks flagged WEAK_TESTS, weakest first; each flag with its task count, commonest first)."""
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
                "proven_weak": len((summaries[vid].get("generated") or {}).get("proven_non_equivalent") or []),
            }
            for vid, code, _, _ in flag_rows
            if code == "WEAK_TESTS"
        ),
        key=lambda row: (row["score"], row["slug"]),
    )
    flags = [
        {"code": code, "severity": severity, "tasks": count}
        for (code, severity), count in sorted(flag_counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return weak, flags


def _generated_figures(summaries: Summaries, slug_of: Slugs) -> dict[str, Any]:
    """What the generated inputs said of the survivors, pooled and task by task (tasks
    with a proven weak survivor, most first), and the tests they proposed and had accepted."""
    judged = {pk: s["generated"] for pk, s in summaries.items() if (s.get("generated") or {}).get("status") in JUDGED}
    counts = proposal_counts(judged)
    tasks = []
    for pk, generated in judged.items():
        proven = generated.get("proven_non_equivalent") or []
        proposed, accepted = counts.get(pk, (0, 0))
        if proven or proposed:
            tasks.append({"slug": slug_of[pk], "proven_weak": len(proven),
                          "probably_equivalent": len(generated.get("probably_equivalent") or []),
                          "equivalence_share": generated.get("equivalence_share"),
                          "score_nonequivalent": (generated.get("mutation_score_nonequivalent") or {}).get("value"),
                          "proposed": proposed, "accepted": accepted})  # fmt: skip
    tasks.sort(key=lambda row: (-row["proven_weak"], row["slug"]))
    survivors = sum(int(g.get("survivors") or 0) for g in judged.values())
    probable = sum(len(g.get("probably_equivalent") or []) for g in judged.values())
    return {
        "tasks_judged": len(judged),
        "not_judged": len(summaries) - len(judged),
        "inputs_generated": sum(int((g.get("inputs") or {}).get("generated") or 0) for g in judged.values()),
        "inputs_valid": sum(int((g.get("inputs") or {}).get("valid") or 0) for g in judged.values()),
        "survivors": survivors,
        "proven_weak": sum(len(g.get("proven_non_equivalent") or []) for g in judged.values()),
        "probably_equivalent": probable,
        "unjudged": sum(len(g.get("unjudged") or []) for g in judged.values()),
        "equivalence_share": probable / survivors if survivors else None,
        "tasks_with_proven_weak": sum(1 for row in tasks if row["proven_weak"]),
        "tests_proposed": sum(p for p, _ in counts.values()),
        "tests_accepted": sum(a for _, a in counts.values()),
        "tasks": tasks,
    }


def _probe_figures(done_ids: list[int], slug_of: Slugs) -> tuple[list[dict[str, Any]], list[str]]:
    """(on how many tasks each probe ran and on how many it passed; the tasks where any passed)."""
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
    return probes, hackable_tasks


def _noise_figures(summaries: Summaries) -> dict[str, Any]:
    """Reward noise: its spread over tasks, in NOISE_BINS, and the known-wrong runs behind it."""
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
    return {
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
    }


def _runtime_figures(
    done: list[Verification], done_ids: list[int], summaries: Summaries, slug_of: Slugs
) -> dict[str, Any]:
    """Runtime: the span the verifications took, what the sandboxes spent, and the reference's headroom."""
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
    return {
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
    }
