"""The Celery application: workers and beat read their settings from Django's (CELERY_*)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

app = Celery("healthmon")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
