from typing import Any

from django.apps import AppConfig
from django.conf import settings


class EvaluationConfig(AppConfig):
    """Verification: sandboxes, harness, mutants, exploit probes, metrics (issues 3-5)."""

    name = "evaluation"
    verbose_name = "Verification"

    def ready(self) -> None:
        from tasks_app.signals import version_submitted

        version_submitted.connect(_verify_on_submit, dispatch_uid="evaluation.verify_on_submit")


def _verify_on_submit(sender: Any, *, version_id: int, actor_id: int | None = None, **_: Any) -> None:
    """Submitting a version enqueues its verification (VERIFICATION["ON_SUBMIT"])."""
    if not getattr(settings, "VERIFICATION", {}).get("ON_SUBMIT", True):
        return
    from evaluation.tasks import verify_version

    verify_version.delay(version_id, requested_by_id=actor_id)
