from typing import Any

from django.apps import AppConfig
from django.conf import settings


class EvaluationConfig(AppConfig):
    """Verification: sandboxes, harness, mutants, exploit probes, metrics (issues 3-5)."""

    name = "evaluation"
    verbose_name = "Verification"

    def ready(self) -> None:
        from tasks_app.signals import review_rows_shown, version_submitted

        version_submitted.connect(_verify_on_submit, dispatch_uid="evaluation.verify_on_submit")
        review_rows_shown.connect(_review_figures, dispatch_uid="evaluation.review_figures")


def _verify_on_submit(sender: Any, *, version_id: int, actor_id: int | None = None, **_: Any) -> None:
    """Submitting a version whose verification under the current configuration is
    done already (verified before it was submitted) moves its task at once by that
    verdict; otherwise it enqueues the verification (VERIFICATION["ON_SUBMIT"]),
    which decides when it finishes."""
    from evaluation.verification.finishing import verification_verdict_apply

    if verification_verdict_apply(version_id=version_id):
        return
    if not getattr(settings, "VERIFICATION", {}).get("ON_SUBMIT", True):
        return
    from evaluation.tasks import enqueue_verification

    enqueue_verification(version_id, requested_by_id=actor_id)


def _review_figures(sender: Any, *, tasks: Any, **_: Any) -> dict[int, dict[str, Any]]:
    """Each review-queue row's proven weak survivors and proposed tests (two queries a page)."""
    from evaluation.verification.generated.selectors import review_figures

    return {pk: {"generated": figures} for pk, figures in review_figures(list(tasks)).items()}
