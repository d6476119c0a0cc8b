"""Give each project a ping key for its heartbeats' slug URLs, a fresh one per existing project."""

from django.db import migrations, models

import accounts.models


def fill_ping_keys(apps, schema_editor):
    Project = apps.get_model("accounts", "Project")
    for project in Project.objects.filter(ping_key__isnull=True).only("id"):
        project.ping_key = accounts.models.new_ping_key()
        project.save(update_fields=["ping_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_audit_alert_actions"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="ping_key",
            field=models.CharField(editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(fill_ping_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="project",
            name="ping_key",
            field=models.CharField(
                default=accounts.models.new_ping_key, editable=False, max_length=64, unique=True
            ),
        ),
    ]
