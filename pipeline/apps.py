from django.apps import AppConfig


class PipelineConfig(AppConfig):
    """The check pipeline: what a batch of probe results causes, stage by stage."""

    name = "pipeline"
    default_auto_field = "django.db.models.BigAutoField"
