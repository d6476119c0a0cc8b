# The alert models moved to the `alerts` app, keeping their tables and rows: only the
# migration state changes here (alerts 0001 takes them over).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0006_delivery_held_idx'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='deliveryattempt',
                    name='delivery',
                ),
                migrations.RemoveField(
                    model_name='maintenancewindow',
                    name='endpoints',
                ),
                migrations.RemoveField(
                    model_name='maintenancewindow',
                    name='organization',
                ),
                migrations.RemoveField(
                    model_name='maintenancewindow',
                    name='projects',
                ),
                migrations.RemoveField(
                    model_name='notificationchannel',
                    name='endpoints',
                ),
                migrations.RemoveField(
                    model_name='notificationchannel',
                    name='organization',
                ),
                migrations.RemoveField(
                    model_name='notificationchannel',
                    name='projects',
                ),
                migrations.DeleteModel(
                    name='Delivery',
                ),
                migrations.DeleteModel(
                    name='DeliveryAttempt',
                ),
                migrations.DeleteModel(
                    name='MaintenanceWindow',
                ),
                migrations.DeleteModel(
                    name='NotificationChannel',
                ),
            ],
            database_operations=[],
        ),
    ]
