"""The Celery application: workers and beat read their settings from Django's (CELERY_*)."""

import gc
import os
import threading
from functools import partial
from typing import Any

import structlog
from celery import Celery, Task
from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_ready,
)
from celery.worker.consumer import Consumer
from django.utils.module_loading import import_string
from kombu import Connection

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

# The message header that carries the id of the request that queued a task, so a worker's
# lines for that task (the check a `check-now` asked for, a test notification) carry it too.
REQUEST_ID_HEADER = "request_id"

# How long a worker waits between attempts to reach a broker that went away.
RECONNECT_SECONDS = 1
# The loop that keeps a worker's probe location alive. It lives in monitoring, a layer
# above this one, so it is named rather than imported (as healthmon.queue names tasks).
LOCATION_HEARTBEAT = "monitoring.locations_live.heartbeat_forever"


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


@worker_ready.connect
def keep_location_alive(sender: Consumer, **kwargs: Any) -> None:
    """Start the thread that keeps this worker's probe location online (a heartbeat every
    15 s in the database), for as long as the worker process lives."""
    queues = list(sender.app.amqp.queues.consume_from or ())
    heartbeat = import_string(LOCATION_HEARTBEAT)
    threading.Thread(
        target=heartbeat, args=(sender.hostname, queues), name="location-heartbeat", daemon=True
    ).start()


# Context bound for each running task, kept to be undone when it ends: an eager task (tests,
# `make run` with CELERY_TASK_ALWAYS_EAGER) runs inside the request that queued it, whose own
# id must survive the task.
# Keyed by task id and thread: a task redelivered while its first run goes on runs twice.
_bound: dict[tuple[str, int], Any] = {}


@before_task_publish.connect
def carry_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """Put the id of the request being answered, if any, in the task's message headers."""
    request_id = structlog.contextvars.get_contextvars().get("request_id")
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


@task_prerun.connect
def bind_task(task_id: str, task: Task, **kwargs: Any) -> None:
    """Bind the task's name and id, and the request id it was queued with, to its lines."""
    context: dict[str, Any] = {"task": task.name, "task_id": task_id}
    request_id = task.request.get(REQUEST_ID_HEADER)
    if request_id:
        context["request_id"] = request_id
    _bound[task_id, threading.get_ident()] = structlog.contextvars.bind_contextvars(**context)


@task_postrun.connect
def unbind_task(task_id: str, **kwargs: Any) -> None:
    """Give back the context the task found (none on a worker, the request's when eager)."""
    tokens = _bound.pop((task_id, threading.get_ident()), None)
    if tokens:
        structlog.contextvars.reset_contextvars(**tokens)
