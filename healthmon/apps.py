from django.apps import AppConfig


class HealthmonConfig(AppConfig):
    """The project package: static files, template tags, and database connection set-up."""

    name = "healthmon"

    def ready(self) -> None:
        """Read PostgreSQL timestamps with the fast loader (healthmon/timestamps.py) and
        write binary arrays of fixed-size values at C speed (healthmon/arrays.py); skip
        the health check of a kept connection the server has sent nothing on."""
        from django.core.signals import request_started

        from healthmon import arrays, timestamps
        from healthmon.db import skip_quiet_health_checks

        timestamps.connect()
        arrays.connect()
        # After Django's close_old_connections (connected when django.db was imported),
        # which marks every kept connection as unchecked.
        request_started.connect(skip_quiet_health_checks, dispatch_uid="skip_quiet_health_checks")
