# The alert models, moved here from `monitoring` with their tables (db_table keeps the names):
# the state is taken over, nothing in the database changes but the content types' app label.

import django.db.models.deletion
import django.utils.timezone
import healthmon.encryption
import uuid
from django.db import migrations, models


MODELS = ["notificationchannel", "maintenancewindow", "delivery", "deliveryattempt"]


def _relabel(apps, source, target):
    """Keep the admin's permissions and log entries: they point at these content types."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label=source, model__in=MODELS).update(app_label=target)


def move_content_types(apps, schema_editor):
    _relabel(apps, "monitoring", "alerts")


def move_content_types_back(apps, schema_editor):
    _relabel(apps, "alerts", "monitoring")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0003_audit_alert_actions'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('monitoring', '0007_alerts_moved_out'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Delivery',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('event', models.CharField(choices=[('incident.opened', 'Incident opened'), ('incident.resolved', 'Incident resolved'), ('test', 'Test')], max_length=32)),
                        ('event_id', models.UUIDField()),
                        ('occurred_at', models.DateTimeField()),
                        ('payload', models.JSONField(default=dict, help_text='The event as sent (no secrets).')),
                        ('status', models.CharField(choices=[('pending', 'Pending (an attempt is due or running)'), ('delivered', 'Delivered'), ('failed', 'Failed (gave up)'), ('suppressed', 'Suppressed (maintenance)')], default='pending', max_length=16)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                        ('last_error', models.CharField(blank=True, max_length=500)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ('delivered_at', models.DateTimeField(blank=True, null=True)),
                        ('incident', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='monitoring.incident')),
                    ],
                    options={
                        'verbose_name_plural': 'deliveries',
                        'db_table': 'monitoring_delivery',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='DeliveryAttempt',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('attempted_at', models.DateTimeField()),
                        ('ok', models.BooleanField()),
                        ('status_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                        ('error', models.CharField(blank=True, max_length=500)),
                        ('duration_ms', models.FloatField()),
                        ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tries', to='alerts.delivery')),
                    ],
                    options={
                        'db_table': 'monitoring_deliveryattempt',
                        'ordering': ['attempted_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='NotificationChannel',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ('name', models.CharField(max_length=200)),
                        ('kind', models.CharField(choices=[('email', 'Email'), ('webhook', 'Webhook (signed JSON)'), ('slack', 'Slack incoming webhook'), ('teams', 'Microsoft Teams webhook'), ('discord', 'Discord webhook')], max_length=16)),
                        ('config', healthmon.encryption.EncryptedJSONField(default=dict)),
                        ('config_masked', models.JSONField(default=dict, editable=False)),
                        ('secret', healthmon.encryption.EncryptedTextField(blank=True, editable=False)),
                        ('enabled', models.BooleanField(default=True)),
                        ('consecutive_failures', models.PositiveIntegerField(default=0, editable=False)),
                        ('failing_since', models.DateTimeField(blank=True, editable=False, null=True)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('endpoints', models.ManyToManyField(blank=True, related_name='+', to='monitoring.endpoint')),
                        ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.organization')),
                        ('projects', models.ManyToManyField(blank=True, related_name='+', to='accounts.project')),
                    ],
                    options={
                        'db_table': 'monitoring_notificationchannel',
                        'ordering': ['created_at', 'id'],
                    },
                ),
                migrations.AddField(
                    model_name='delivery',
                    name='channel',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='alerts.notificationchannel'),
                ),
                migrations.CreateModel(
                    name='MaintenanceWindow',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('starts_at', models.DateTimeField()),
                        ('ends_at', models.DateTimeField()),
                        ('recurrence', models.CharField(blank=True, choices=[('', 'Once'), ('weekly', 'Weekly')], default='', max_length=8)),
                        ('endpoints', models.ManyToManyField(blank=True, related_name='+', to='monitoring.endpoint')),
                        ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.organization')),
                        ('projects', models.ManyToManyField(blank=True, related_name='+', to='accounts.project')),
                    ],
                    options={
                        'db_table': 'monitoring_maintenancewindow',
                        'ordering': ['starts_at', 'id'],
                        'indexes': [models.Index(fields=['organization', 'ends_at'], name='maintenance_org_idx')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('ends_at__gt', models.F('starts_at'))), name='maintenance_ends_after_start')],
                    },
                ),
                migrations.AddIndex(
                    model_name='notificationchannel',
                    index=models.Index(fields=['organization', 'created_at'], name='channel_org_idx'),
                ),
                migrations.AddIndex(
                    model_name='delivery',
                    index=models.Index(fields=['channel', 'created_at'], name='delivery_channel_idx'),
                ),
                migrations.AddIndex(
                    model_name='delivery',
                    index=models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='delivery_due_idx'),
                ),
                migrations.AddIndex(
                    model_name='delivery',
                    index=models.Index(condition=models.Q(('next_attempt_at__isnull', False), ('status', 'suppressed')), fields=['next_attempt_at'], name='delivery_held_idx'),
                ),
                migrations.AddConstraint(
                    model_name='delivery',
                    constraint=models.UniqueConstraint(fields=('channel', 'event_id'), name='delivery_once_per_event'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
