"""The uptime reads' indexes of status moves and incidents (issue 26).

Uptime and SLA figures read each endpoint's moves into and out of the unwatched statuses
(paused and pending). `status_pause_idx` held the paused ones only, so the read used the
endpoint's whole history instead (17,000 rows read to keep 1,000 for an organization of
1,000 endpoints). `status_unwatched_idx` holds both statuses and includes the columns the read
returns: an index-only scan on PostgreSQL.

The same reads take each endpoint's incidents over a window: `incident_endpoint_span_idx`
is `incident_endpoint_idx` (endpoint, started_at) including `resolved_at`, so they too are
read from the index alone (built before the old one is dropped, so that neither read goes
without). It leads with `endpoint`, so the foreign key's own index goes too: the planner
preferred that one and read the incidents from the table.

Built and dropped CONCURRENTLY on PostgreSQL: the table takes the check pipeline's writes.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from healthmon.db import AddIndexConcurrently, RemoveIndexConcurrently


def _endpoint_field(db_index: bool) -> models.ForeignKey:
    return models.ForeignKey(
        blank=True,
        db_index=db_index,
        null=True,
        on_delete=django.db.models.deletion.CASCADE,
        related_name="incidents",
        to="monitoring.endpoint",
    )


def _fk_index(apps: Any, schema_editor: Any, *, keep: bool) -> None:
    """Drop (or, backwards, make) the index of `Incident.endpoint`, by the name Django
    gave it: CONCURRENTLY on PostgreSQL, whose table takes the pipeline's writes."""
    model = apps.get_model("monitoring", "Incident")
    table, column = model._meta.db_table, model._meta.get_field("endpoint").column
    quote = schema_editor.quote_name
    name = quote(schema_editor._create_index_name(table, [column]))
    concurrently = " CONCURRENTLY" if schema_editor.connection.vendor == "postgresql" else ""
    if keep:
        schema_editor.execute(
            f"CREATE INDEX{concurrently} IF NOT EXISTS {name} ON {quote(table)} ({quote(column)})"
        )
    else:
        schema_editor.execute(f"DROP INDEX{concurrently} IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("monitoring", "0027_endpoint_fillfactor")]

    operations = [
        AddIndexConcurrently(
            model_name="statuschange",
            index=models.Index(
                condition=models.Q(
                    ("to_status__in", ("paused", "pending")),
                    ("from_status__in", ("paused", "pending")),
                    _connector="OR",
                ),
                fields=["endpoint", "changed_at"],
                include=("from_status", "to_status", "id"),
                name="status_unwatched_idx",
            ),
        ),
        RemoveIndexConcurrently(model_name="statuschange", name="status_pause_idx"),
        AddIndexConcurrently(
            model_name="incident",
            index=models.Index(
                fields=["endpoint", "started_at"],
                include=("resolved_at",),
                name="incident_endpoint_span_idx",
            ),
        ),
        RemoveIndexConcurrently(model_name="incident", name="incident_endpoint_idx"),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="incident", name="endpoint", field=_endpoint_field(False)
                )
            ],
            database_operations=[
                migrations.RunPython(
                    lambda apps, editor: _fk_index(apps, editor, keep=False),
                    lambda apps, editor: _fk_index(apps, editor, keep=True),
                )
            ],
        ),
    ]
