"""healthmon's WSGI app plus the floor of a durable ping, for bench/pings.py.

`/floor/<uuid>` stores a ping with the least a ping route can do and still answer `OK` only
once the ping is on disk: one `INSERT ... SELECT` that finds the heartbeat by its key,
committed (autocommit), through the same middleware. No rate limit, no body, no state check.
The gap between it and `/ping/<uuid>` is what healthmon's own code costs; the gap between it
and the bare view is what a durable write costs on this machine.
"""

# ruff: noqa: I001 - Django is set up by the first import, before the others.
from healthmon.wsgi import application

import healthmon.urls
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from monitoring.models import time_ordered_uuid

FLOOR = (
    "INSERT INTO monitoring_ping (id, endpoint_id, kind, received_at, method, user_agent, "
    "body, body_size, body_truncated, pending) "
    "SELECT %s, id, 'success', now(), 'GET', '', '', 0, false, true "
    "FROM monitoring_endpoint WHERE ping_key = %s"
)


@csrf_exempt
def floor(request: HttpRequest, key: str) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute(FLOOR, [time_ordered_uuid(), key])  # ids in time order, as healthmon's
        stored = cursor.rowcount == 1
    return HttpResponse("OK" if stored else "not found", status=200 if stored else 404)


# The URL resolver is built at the first request: the route added now is served.
healthmon.urls.urlpatterns.append(path("floor/<uuid:key>", floor))
__all__ = ["application"]
