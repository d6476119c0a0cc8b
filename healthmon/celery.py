"""The Celery application: workers and beat read their settings from Django's (CELERY_*)."""

import gc
import os
from typing import Any

from celery import Celery
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

app = Celery("healthmon")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
@worker_process_init.connect
def freeze_startup_objects(**kwargs: Any) -> None:
    """Move what start-up created (Django, the apps, the clients: ~100,000 objects) out of
    the cyclic garbage collector's sight: scanning them again and again cost the probe
    engine a quarter of its CPU in the benchmark (bench/README.md)."""
    gc.collect()
    gc.freeze()
