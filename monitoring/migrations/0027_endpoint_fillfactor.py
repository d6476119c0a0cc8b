"""On PostgreSQL: room on each page of the endpoint table for its rows' next versions.

Every check round rewrites each endpoint row (its state, streaks and next slot). With the
table's pages full (fillfactor 100, the default), PostgreSQL cannot put the new version
beside the old one (a HOT update), so every update writes each of the table's indexes too:
at ingest 520 of 192,000 updates were HOT, and the endpoint UPDATE cost 41-55 µs of database
CPU per result against 17 at fillfactor 50 (bench/README.md, ingest). The setting takes a
lock that readers and writers do not wait for; pages already full fill up the new way as
their rows move.
"""

from django.db import migrations

TABLE = "monitoring_endpoint"


def set_fillfactor(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} SET (fillfactor = 50)")


def reset_fillfactor(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0026_incident_org_indexes")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor, elidable=False)]
