from django.apps import AppConfig


class ApikeysConfig(AppConfig):
    """Scoped API keys for programs."""

    name = "apikeys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the OpenAPI extension of the authentication class."""
        from apikeys import schema  # noqa: F401
