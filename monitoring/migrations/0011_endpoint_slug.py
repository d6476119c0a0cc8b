"""An optional slug per heartbeat, unique in its project, for `/ping/<project ping_key>/<slug>`."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0010_heartbeat_endpoints"),
    ]

    operations = [
        migrations.AddField(
            model_name="endpoint",
            name="slug",
            field=models.CharField(blank=True, max_length=100, null=True),
        ),
        migrations.AddConstraint(
            model_name="endpoint",
            constraint=models.UniqueConstraint(
                condition=models.Q(slug__isnull=False),
                fields=("project", "slug"),
                name="endpoint_slug_unique_in_project",
            ),
        ),
    ]
