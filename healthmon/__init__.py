"""healthmon project package: settings, URLs, the Celery app and the API error format."""

from healthmon.celery import app as celery_app

__all__ = ["celery_app"]
