"""One check per slot and location: the unique constraint gains `location`.

On PostgreSQL the new unique index is built CONCURRENTLY (checks keep being stored while it
builds, however big the table), then swapped in for the old constraint in two short
statements; elsewhere the constraint is simply replaced.
"""

from typing import Any

from django.db import migrations, models

NEW_INDEX = "check_one_per_slot_location"


def _remake(apps: Any, schema_editor: Any, fields: list[str]) -> None:
    """SQLite: rebuild the table with the constraint on `fields`. Its unique constraints
    are part of the table, rebuilt from the model's constraints by both remove_constraint
    and add_constraint; this state's model still lists the old one, so it is swapped on
    the model first (its historical copy: nothing else sees it)."""
    model = apps.get_model("monitoring", "CheckResult")
    kept = [c for c in model._meta.constraints if c.name != "check_one_per_slot"]
    model._meta.constraints = [
        *kept,
        models.UniqueConstraint(fields=fields, name="check_one_per_slot"),
    ]
    schema_editor._remake_table(model)


def _partitioned(schema_editor: Any) -> bool:
    """Whether the table is partitioned: 0024 was reversed (it leaves the partitioned table,
    which serves the earlier state too) and is being applied again. Such a table refuses
    CREATE INDEX CONCURRENTLY: its constraint is replaced in place."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT relkind FROM pg_class WHERE oid = 'monitoring_checkresult'::regclass"
        )
        return cursor.fetchone()[0] == "p"


def swap(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        _remake(apps, schema_editor, ["endpoint", "scheduled_for", "location"])
        return
    if schema_editor.connection.vendor != "postgresql" or _partitioned(schema_editor):
        model = apps.get_model("monitoring", "CheckResult")
        schema_editor.remove_constraint(
            model,
            models.UniqueConstraint(
                fields=["endpoint", "scheduled_for"], name="check_one_per_slot"
            ),
        )
        schema_editor.add_constraint(
            model,
            models.UniqueConstraint(
                fields=["endpoint", "scheduled_for", "location"], name="check_one_per_slot"
            ),
        )
        return
    table = "monitoring_checkresult"
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NEW_INDEX}")  # a failed try's
    schema_editor.execute(
        f"CREATE UNIQUE INDEX CONCURRENTLY {NEW_INDEX}"
        f" ON {table} (endpoint_id, scheduled_for, location)"
    )
    # The swap itself is quick but takes the table's strongest lock: waiting for it behind a
    # long read would stall every check insert queued behind the wait. Give up after a few
    # seconds instead (run `migrate` again: the index is rebuilt, the swap tried again).
    schema_editor.execute("SET lock_timeout = '5s'")
    try:
        schema_editor.execute(
            f"ALTER TABLE {table} DROP CONSTRAINT check_one_per_slot,"
            f" ADD CONSTRAINT check_one_per_slot UNIQUE USING INDEX {NEW_INDEX}"
        )
    finally:
        schema_editor.execute("RESET lock_timeout")


def unswap(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        _remake(apps, schema_editor, ["endpoint", "scheduled_for"])
        return
    model = apps.get_model("monitoring", "CheckResult")
    schema_editor.remove_constraint(
        model,
        models.UniqueConstraint(
            fields=["endpoint", "scheduled_for", "location"], name="check_one_per_slot"
        ),
    )
    schema_editor.add_constraint(
        model,
        models.UniqueConstraint(fields=["endpoint", "scheduled_for"], name="check_one_per_slot"),
    )


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("monitoring", "0022_probe_locations")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(swap, unswap)],
            state_operations=[
                migrations.RemoveConstraint(model_name="checkresult", name="check_one_per_slot"),
                migrations.AddConstraint(
                    model_name="checkresult",
                    constraint=models.UniqueConstraint(
                        fields=("endpoint", "scheduled_for", "location"),
                        name="check_one_per_slot",
                    ),
                ),
            ],
        )
    ]
