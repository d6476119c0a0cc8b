"""The dispatcher's index leaves heartbeats out (`endpoint_probe_due_idx` replaces
`endpoint_due_idx`).

Built and dropped CONCURRENTLY on PostgreSQL: the endpoint table takes the dispatcher's
writes every second, which a plain CREATE or DROP INDEX would block.
"""

from typing import Any

from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations, models
from django.db.migrations import RemoveIndex

from healthmon.db import AddIndexConcurrently


class RemoveIndexConcurrentlyOnPostgres(RemoveIndexConcurrently):
    """DROP INDEX CONCURRENTLY on PostgreSQL; a plain DROP INDEX elsewhere (SQLite)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


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
        RemoveIndexConcurrentlyOnPostgres(model_name="endpoint", name="endpoint_due_idx"),
    ]
