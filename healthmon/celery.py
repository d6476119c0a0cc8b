"""The Celery application: workers and beat read their settings from Django's (CELERY_*)."""

import gc
import os
from functools import partial
from typing import Any

from celery import Celery
from celery.signals import setup_logging, worker_process_init, worker_ready
from celery.worker.consumer import Consumer
from kombu import Connection

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

# How long a worker waits between attempts to reach a broker that went away.
RECONNECT_SECONDS = 1


class PromptConsumer(Consumer):
    """Celery's consumer, trying a lost broker again every second.

    Celery's own backoff grows to 30 s between attempts, so after Redis restarts the
    workers (the dispatcher's too) could take half a minute to come back, and endpoints
    checked every 10 s would miss three slots. An attempt costs one refused connection.
    """

    def ensure_connected(self, conn: Connection) -> Connection:
        """Connect, retrying every `RECONNECT_SECONDS` for as long as it takes."""
        conn.ensure_connection = partial(  # type: ignore[method-assign]
            conn.ensure_connection,
            interval_start=RECONNECT_SECONDS,
            interval_step=0,
            interval_max=RECONNECT_SECONDS,
        )
        connected: Connection = super().ensure_connected(conn)
        return connected


app = Celery("healthmon")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.worker_consumer = f"{__name__}:PromptConsumer"
app.autodiscover_tasks()


@setup_logging.connect
def keep_django_logging(**kwargs: Any) -> None:
    """Leave logging as settings' LOGGING made it (structlog's renderer on the root), so that
    Celery's own lines, the worker's and beat's, come out as structured as the web's."""


@worker_ready.connect
@worker_process_init.connect
def freeze_startup_objects(**kwargs: Any) -> None:
    """Move what start-up created (Django, the apps, the clients: ~100,000 objects) out of
    the cyclic garbage collector's sight: scanning them again and again cost the probe
    engine a quarter of its CPU in the benchmark (bench/README.md)."""
    gc.collect()
    gc.freeze()
