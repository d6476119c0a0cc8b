from django.apps import AppConfig


class StatuspagesConfig(AppConfig):
    """Public status pages, their subscribers and badges."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "statuspages"
    verbose_name = "Status pages"
