"""The dispatcher's index leaves heartbeats out (`endpoint_probe_due_idx` replaces
`endpoint_due_idx`).

Built and dropped CONCURRENTLY on PostgreSQL: the endpoint table takes the dispatcher's
writes every second, which a plain CREATE or DROP INDEX would block.
"""

from django.db import migrations, models

from healthmon.db import AddIndexConcurrently, RemoveIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # CREATE and DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("monitoring", "0024_checkresult_partitioned")]

    operations = [
        AddIndexConcurrently(
            model_name="endpoint",
            index=models.Index(
                condition=models.Q(("enabled", True), models.Q(("type", "heartbeat"), _negated=True)),
                fields=["next_check_at"],
                name="endpoint_probe_due_idx",
            ),
        ),
        RemoveIndexConcurrently(model_name="endpoint", name="endpoint_due_idx"),
    ]
