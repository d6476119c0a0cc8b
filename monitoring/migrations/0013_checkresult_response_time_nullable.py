"""A check may have no response time: a heartbeat ping with no paired start, a missed deadline."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0012_ping_pending'),
    ]

    operations = [
        migrations.AlterField(
            model_name='checkresult',
            name='response_time_ms',
            field=models.FloatField(blank=True, null=True),
        ),
    ]
