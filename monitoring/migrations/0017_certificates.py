"""Certificates a check saw, stored on the endpoint, and the expiry thresholds announced."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0016_degraded_above_ms'),
    ]

    operations = [
        migrations.AddField(
            model_name='endpoint',
            name='certificate_expires_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='endpoint',
            name='certificate_fingerprint',
            field=models.CharField(blank=True, db_default='', default='', editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='endpoint',
            name='certificate_issuer',
            field=models.CharField(blank=True, db_default='', default='', editable=False, max_length=500),
        ),
        migrations.AddField(
            model_name='endpoint',
            name='certificate_not_before',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='endpoint',
            name='certificate_subject',
            field=models.CharField(blank=True, db_default='', default='', editable=False, max_length=500),
        ),
        migrations.AddField(
            model_name='endpoint',
            name='certificate_warned_within',
            field=models.DurationField(blank=True, editable=False, null=True),
        ),
        migrations.AlterField(
            model_name='endpoint',
            name='detected_type',
            field=models.CharField(blank=True, choices=[('http', 'HTTP(S)'), ('graphql', 'GraphQL'), ('grpc', 'gRPC'), ('postgresql', 'PostgreSQL'), ('mysql', 'MySQL / MariaDB'), ('redis', 'Redis'), ('elasticsearch', 'Elasticsearch'), ('websocket', 'WebSocket'), ('tcp', 'TCP port'), ('smtp', 'SMTP'), ('icmp', 'ICMP (ping)'), ('dns', 'DNS'), ('tls', 'TLS certificate'), ('custom', 'Custom (auto-detect)'), ('heartbeat', 'Heartbeat (the job pings us)')], editable=False, max_length=16),
        ),
        migrations.AlterField(
            model_name='endpoint',
            name='type',
            field=models.CharField(choices=[('http', 'HTTP(S)'), ('graphql', 'GraphQL'), ('grpc', 'gRPC'), ('postgresql', 'PostgreSQL'), ('mysql', 'MySQL / MariaDB'), ('redis', 'Redis'), ('elasticsearch', 'Elasticsearch'), ('websocket', 'WebSocket'), ('tcp', 'TCP port'), ('smtp', 'SMTP'), ('icmp', 'ICMP (ping)'), ('dns', 'DNS'), ('tls', 'TLS certificate'), ('custom', 'Custom (auto-detect)'), ('heartbeat', 'Heartbeat (the job pings us)')], max_length=16),
        ),
    ]
