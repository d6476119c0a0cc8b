from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Organizations, users, roles, projects, invitations and authentication."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the OpenAPI extension of the authentication class."""
        from accounts import schema  # noqa: F401
