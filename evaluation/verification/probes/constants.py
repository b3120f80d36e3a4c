"""Values the probes splice into their code, and the names callers group probes by."""

from __future__ import annotations

SUITE_KINDS = ("assertions", "check_function", "pytest", "stdio", "function_calls")
# The name a check(candidate) module calls the entry point by.
CANDIDATE_NAME = "candidate"
FAKE_PASS_OUTPUT = "OK\npassed\nAll tests passed\n1 passed in 0.01s\n"  # noqa: S105 - a fake report, no secret
SLEEP_S = 3600
# Probes whose whole hack is to run into the time limit (a sleep, a busy loop): any limit shows it fails.
TIMEOUT_PROBES = frozenset({"sleep_past_limit", "spin_forever"})
