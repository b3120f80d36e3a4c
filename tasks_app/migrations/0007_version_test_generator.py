from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0006_version_comparator"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskversion",
            name="test_generator",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
