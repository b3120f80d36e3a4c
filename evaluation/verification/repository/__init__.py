"""Verifying repository tasks: every execution is an agent session that lays a patch
down, submits, and takes the verdict (docs/verification.md, "Repository tasks").

- `scratch`: a throwaway git repository on the host, where patches are applied and
  written by git itself (the tool the verdict applies them with);
- `changes`: the lines and functions a patch changes;
- `planning`: the executions of a repository version (reference, the empty patch,
  adversarial patches, test-tampering probes, mutants of the changed functions);
- `runs`: one execution run as a session on this worker.

The program kinds never reach this package: the pipeline branches on `is_repository`.
"""

from __future__ import annotations

from django.conf import settings

from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.verdict import VERDICT_ATTEMPTS
from tasks_app.models import TaskVersion
from tasks_app.repository.content import REPOSITORY_KIND

# Laying a patch down is two steps (write it, git apply), each within a step's timeout.
PATCH_STEPS = 2


def is_repository(version: TaskVersion) -> bool:
    return version.suite_kind == REPOSITORY_KIND


def verdict_timeout_s(version: TaskVersion) -> float:
    """How long the verdict's tests may run: the limit a repository task's runs are held
    to, as the time limit is a program's (figures compare the reference's times with it)."""
    if not is_repository(version):
        return float(version.time_limit_s)
    return float(settings.SESSIONS["VERDICT_TIMEOUT_S"])


def execution_time_limit_s(version: TaskVersion) -> float:
    """The longest one execution of `version` runs: a program's time limit; for a
    repository task the patch laid down and the verdict, tried twice when its sandbox
    fails. Claims, deadlines and chunk sizes are measured by it."""
    if not is_repository(version):
        return float(version.time_limit_s)
    return VERDICT_ATTEMPTS * verdict_timeout_s(version) + PATCH_STEPS * SessionLimits().step_timeout_s
