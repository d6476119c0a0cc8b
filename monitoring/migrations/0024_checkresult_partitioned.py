"""Raw checks partitioned by UTC day on PostgreSQL (issue 26); elsewhere nothing changes.

The model is unchanged: Django keeps `id` as the primary key, while PostgreSQL's is
(id, scheduled_for), as a partitioned table's unique keys must hold the partition key.
An existing table is copied in batches and swapped in under a lock of milliseconds
(`monitoring/partitions_convert.py`); a fresh one goes the same way, with nothing to copy.
A migration interrupted half-way resumes where it stopped. Reversing it changes nothing:
the partitioned table serves the earlier migrations' state as well.
"""

from typing import Any

from django.conf import settings
from django.db import migrations


def partition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    from monitoring.partitions_convert import partitions_convert

    partitions_convert(ahead_days=settings.CHECK_PARTITIONS_AHEAD_DAYS, say=lambda text: None)


class Migration(migrations.Migration):
    atomic = False  # each copy batch and the swap commit on their own: no long lock

    dependencies = [("monitoring", "0023_check_location_unique")]

    operations = [migrations.RunPython(partition, migrations.RunPython.noop)]
