"""Deliveries of `endpoint.degraded` and `endpoint.recovered`: the events, and the endpoint they are about."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alerts', '0001_initial'),
        ('monitoring', '0013_checkresult_response_time_nullable'),
    ]

    operations = [
        migrations.AddField(
            model_name='delivery',
            name='endpoint',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='monitoring.endpoint'),
        ),
        migrations.AlterField(
            model_name='delivery',
            name='event',
            field=models.CharField(choices=[('incident.opened', 'Incident opened'), ('incident.resolved', 'Incident resolved'), ('endpoint.degraded', 'Endpoint degraded'), ('endpoint.recovered', 'Endpoint recovered (no longer degraded)'), ('test', 'Test')], max_length=32),
        ),
    ]
