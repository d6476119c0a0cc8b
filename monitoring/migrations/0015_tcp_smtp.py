"""The tcp and smtp probe kinds (the choices list every kind, icmp and dns included)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0014_icmp_dns'),
    ]

    operations = [
        migrations.AlterField(
            model_name='endpoint',
            name='detected_type',
            field=models.CharField(blank=True, choices=[('http', 'HTTP(S)'), ('graphql', 'GraphQL'), ('grpc', 'gRPC'), ('postgresql', 'PostgreSQL'), ('mysql', 'MySQL / MariaDB'), ('redis', 'Redis'), ('elasticsearch', 'Elasticsearch'), ('websocket', 'WebSocket'), ('tcp', 'TCP port'), ('smtp', 'SMTP'), ('icmp', 'ICMP (ping)'), ('dns', 'DNS'), ('custom', 'Custom (auto-detect)'), ('heartbeat', 'Heartbeat (the job pings us)')], editable=False, max_length=16),
        ),
        migrations.AlterField(
            model_name='endpoint',
            name='type',
            field=models.CharField(choices=[('http', 'HTTP(S)'), ('graphql', 'GraphQL'), ('grpc', 'gRPC'), ('postgresql', 'PostgreSQL'), ('mysql', 'MySQL / MariaDB'), ('redis', 'Redis'), ('elasticsearch', 'Elasticsearch'), ('websocket', 'WebSocket'), ('tcp', 'TCP port'), ('smtp', 'SMTP'), ('icmp', 'ICMP (ping)'), ('dns', 'DNS'), ('custom', 'Custom (auto-detect)'), ('heartbeat', 'Heartbeat (the job pings us)')], max_length=16),
        ),
    ]
