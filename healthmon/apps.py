from django.apps import AppConfig


class HealthmonConfig(AppConfig):
    """The project package: static files, template tags, and database connection set-up."""

    name = "healthmon"

    def ready(self) -> None:
        """Read PostgreSQL timestamps with the fast loader (healthmon/timestamps.py)."""
        from healthmon import timestamps

        timestamps.connect()
