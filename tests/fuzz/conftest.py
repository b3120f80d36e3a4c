"""Hypothesis settings for the fuzz suites: reproducible (derandomized, no example
database) and bounded, so CI sees the same examples every run in well under a minute.

The profile is registered here and used through `fuzz_settings(...)` by the tests of
this folder only, so loading it never changes another suite's Hypothesis settings.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings

PROFILE = "platform-fuzz"

settings.register_profile(
    PROFILE,
    derandomize=True,
    database=None,
    deadline=None,  # two shared, slow cores: a wall-clock deadline would only add flakiness
    max_examples=50,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)


def fuzz_settings(**overrides: Any) -> settings:
    """The fuzz profile with per-test overrides (usually a smaller max_examples)."""
    return settings(settings.get_profile(PROFILE), **overrides)
