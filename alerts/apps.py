from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Notification channels, deliveries and maintenance windows."""

    name = "alerts"
    default_auto_field = "django.db.models.BigAutoField"
