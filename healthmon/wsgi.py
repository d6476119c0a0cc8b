"""WSGI entry point (gunicorn healthmon.wsgi)."""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

application = get_wsgi_application()


def _settle_garbage_collector() -> None:
    """Move what start-up made (Django, the apps, the URL patterns: lasting for the
    process's life) out of the cyclic collector's sight, and let the youngest generation
    grow larger before a collection. A request that builds many short-lived objects (a
    status page of 4,500 day bars) then no longer pays a full collection over everything
    start-up made: a cold render's p95 fell from ~150 ms to its median, ~50 ms
    (bench/README.md, status_pages.py). Workers do the same (healthmon/celery.py)."""
    get_resolver().url_patterns  # noqa: B018 - loads the URL modules now, not per request
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(20_000, older, oldest)


_settle_garbage_collector()
