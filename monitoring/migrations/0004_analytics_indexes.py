"""Indexes for analytics on the two big history tables, built without blocking ingest."""

from django.db import migrations, models

from healthmon.db import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("monitoring", "0003_analytics_fields"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="checkresult",
            index=models.Index(
                condition=models.Q(("ok", False)),
                fields=["endpoint", "checked_at"],
                name="check_failed_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="statuschange",
            index=models.Index(
                condition=models.Q(("to_status", "paused"), ("from_status", "paused"), _connector="OR"),
                fields=["endpoint", "changed_at"],
                name="status_pause_idx",
            ),
        ),
    ]
