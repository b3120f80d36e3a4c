from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Verification: sandboxes, harness, mutants, exploit probes, metrics (issues 3-5)."""

    name = "evaluation"
    verbose_name = "Verification"
