"""`certificate.expiring` deliveries."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alerts', '0002_endpoint_events'),
        ('monitoring', '0017_certificates'),
    ]

    operations = [
        migrations.AlterField(
            model_name='delivery',
            name='event',
            field=models.CharField(choices=[('incident.opened', 'Incident opened'), ('incident.resolved', 'Incident resolved'), ('endpoint.degraded', 'Endpoint degraded'), ('endpoint.recovered', 'Endpoint recovered (no longer degraded)'), ('certificate.expiring', 'Certificate expiring'), ('test', 'Test')], max_length=32),
        ),
    ]
