from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    """Response-time, uptime, error and SLA analytics."""

    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"
