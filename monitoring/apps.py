from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """Monitored endpoints, probes, checks and incidents."""

    name = "monitoring"
    default_auto_field = "django.db.models.BigAutoField"
