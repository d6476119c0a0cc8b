"""Pings stored before they are processed (`Ping.pending`), and the indexes that find a
heartbeat's pending pings and its latest start, success or failure ping in one probe each.

Built concurrently on PostgreSQL: the ping table of a busy installation takes writes all the
time, which a plain CREATE INDEX would block.
"""

from django.db import migrations, models

from healthmon.db import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("monitoring", "0011_endpoint_slug"),
    ]

    operations = [
        migrations.AddField(
            model_name="ping",
            name="pending",
            field=models.BooleanField(default=False),
        ),
        AddIndexConcurrently(
            model_name="ping",
            index=models.Index(
                fields=["endpoint", "kind", "received_at"], name="ping_endpoint_kind_idx"
            ),
        ),
        AddIndexConcurrently(
            model_name="ping",
            index=models.Index(
                condition=models.Q(("pending", True)), fields=["endpoint"], name="ping_pending_idx"
            ),
        ),
    ]
