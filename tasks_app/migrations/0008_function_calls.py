# The signature of function_calls tasks, and the kind itself among the known suite kinds.

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0007_version_test_generator"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="taskversion",
            name="signature",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RemoveConstraint(
            model_name="taskversion",
            name="taskversion_known_suite_kind",
        ),
        migrations.AlterField(
            model_name="taskversion",
            name="suite_kind",
            field=models.CharField(
                choices=[
                    ("assertions", "assertions"),
                    ("check_function", "check_function"),
                    ("pytest", "pytest"),
                    ("stdio", "stdio"),
                    ("function_calls", "function_calls"),
                    ("repository", "repository"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="taskversion",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "suite_kind__in",
                        ("assertions", "check_function", "pytest", "stdio", "function_calls", "repository"),
                    )
                ),
                name="taskversion_known_suite_kind",
            ),
        ),
    ]
