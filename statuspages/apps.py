from django.apps import AppConfig


class StatuspagesConfig(AppConfig):
    """Public status pages, their subscribers and badges."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "statuspages"
    verbose_name = "Status pages"

    def ready(self) -> None:
        """Hear monitoring's incident writes: the pages showing them are re-rendered at once."""
        from statuspages.signals import connect

        connect()
