from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """Monitored endpoints, probes, checks and incidents."""

    name = "monitoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the dispatcher's readiness check (/readyz)."""
        from healthmon.health import register_readiness
        from monitoring.readiness import dispatcher_ready

        register_readiness("dispatcher", dispatcher_ready)
