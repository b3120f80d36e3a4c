"""Writes of the verification pipeline (DESIGN.md: services and selectors)."""

from evaluation.services.config import VerifyConfig
from evaluation.services.requests import mutant_mark_equivalent, verification_request, verifications_request_many
from evaluation.services.verification import (
    SandboxUnavailable,
    execution_run,
    verification_finish,
    verification_plan,
    verification_run_inline,
    verification_verdict_apply,
    verifications_reap,
    verifications_run,
    versions_unplanned,
    versions_verdict_unapplied,
)

__all__ = [
    "SandboxUnavailable",
    "VerifyConfig",
    "execution_run",
    "mutant_mark_equivalent",
    "verification_finish",
    "verification_plan",
    "verification_request",
    "verification_run_inline",
    "verification_verdict_apply",
    "verifications_reap",
    "verifications_request_many",
    "verifications_run",
    "versions_unplanned",
    "versions_verdict_unapplied",
]
