"""Rows of verification results for export: one finished verification as a flat record,
the rows `manage.py verification_report` writes as JSON or CSV.

`ROW_FIELDS` is the CSV header and the JSON keys, in order; `LIST_FIELDS` are the
fields that hold lists (joined with `;` in a CSV cell).

The generated-input figures (proven weak survivors, probably equivalent ones, the
equivalence share, the score without the probably equivalent, tests proposed and
accepted) are null where the verification generated no inputs or the run failed:
unknown, not zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evaluation.models import Verification
from evaluation.verification.generated.selectors import ROW_FIGURES, proposal_counts, row_figures

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
    *ROW_FIGURES,
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


def verification_row(verification: Verification, *, proposals: tuple[int, int] | None = None) -> dict[str, Any]:
    """One finished verification as a flat record (lists for flags and passing probes).
    `proposals`: its (proposed, accepted) counts, when the caller read them for many
    rows at once (verification_rows); read here otherwise."""
    summary = verification.summary or {}
    if proposals is None:
        proposals = proposal_counts([verification.pk]).get(verification.pk)
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
        **row_figures(summary, proposals),
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
    verifications = list(verifications)
    counts = proposal_counts(v.pk for v in verifications)
    return [verification_row(v, proposals=counts.get(v.pk, (0, 0))) for v in verifications]
