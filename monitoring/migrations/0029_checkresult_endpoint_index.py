"""The raw checks lose the foreign key's own index, `(endpoint_id)` (issue 26, ingest).

`check_one_per_slot` (endpoint, scheduled_for, location) and `check_endpoint_time_idx`
(endpoint, checked_at) both lead with the endpoint: every read by endpoint alone (an
endpoint's deletion included) uses one of them. The plain index only made every stored
check write a third index entry: 2.5 µs of ingest's 53 µs of database CPU per result
(bench/README.md, ingest).

On PostgreSQL the table is partitioned, and a partitioned index cannot be dropped
CONCURRENTLY: the drop asks for the table's lock with a short timeout, tried again
(`with_lock_timeout`), so that it never holds the pipeline's inserts queued behind a long
read. Backwards, the index is built again (on every partition, holding writes meanwhile).
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from healthmon.db import with_lock_timeout

LOCK_TIMEOUT = "2s"
ATTEMPTS = 30


def _index(apps: Any, schema_editor: Any, *, keep: bool) -> None:
    """Drop (or, backwards, make) the index of `CheckResult.endpoint`, by the name Django
    gave it."""
    model = apps.get_model("monitoring", "CheckResult")
    table, column = model._meta.db_table, model._meta.get_field("endpoint").column
    quote = schema_editor.quote_name
    name = quote(schema_editor._create_index_name(table, [column]))
    if keep:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {quote(table)} ({quote(column)})"
        )
        return
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        return
    with_lock_timeout(
        lambda: schema_editor.execute(f"DROP INDEX IF EXISTS {name}"),
        timeout=LOCK_TIMEOUT,
        attempts=ATTEMPTS,
        pause=lambda attempt: 1.0 + attempt,
        using=schema_editor.connection.alias,
    )


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0028_uptime_read_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="checkresult",
                    name="endpoint",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="checks",
                        to="monitoring.endpoint",
                    ),
                )
            ],
            database_operations=[
                migrations.RunPython(
                    lambda apps, editor: _index(apps, editor, keep=False),
                    lambda apps, editor: _index(apps, editor, keep=True),
                    elidable=False,
                )
            ],
        ),
    ]
