"""Template helpers of the verification pages that fill tasks_app's extension points."""

from __future__ import annotations

from typing import Any

from django import template

from evaluation.models import ProposedTest, ProposedTestState

register = template.Library()


@register.simple_tag
def proposed_tests_waiting(version: Any) -> int:
    """How many tests the verifications of `version` propose and nobody decided yet
    (one query: the version page shows one version)."""
    return ProposedTest.objects.filter(version=version, state=ProposedTestState.PROPOSED).count()
