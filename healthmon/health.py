"""Operations routes, outside /api/v1 and without auth: liveness (/healthz), readiness
(/readyz) and the Prometheus metrics (/metrics).

Readiness asks each dependency in turn. The database and the broker are asked here; checks
of the layers above (the dispatcher's heartbeat, in monitoring) are registered by their app
at start, as Django's own system checks are, so this module imports no app.
"""

import hmac
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from kombu import Connection
from kombu.exceptions import ChannelError

from healthmon import metrics

# A check answers None when ready, else a short reason (never a secret: no URLs).
ReadinessCheck = Callable[[], str | None]
BROKER_TIMEOUT_SECONDS = 2
_checks: dict[str, ReadinessCheck] = {}


def register_readiness(name: str, check: ReadinessCheck) -> None:
    """Add a readiness check under `name` (an app's `ready()` calls this)."""
    _checks[name] = check


def database_ready() -> str | None:
    """The database answers a query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"unreachable ({type(exc).__name__})"
    return None


def _broker() -> Connection:
    return Connection(
        settings.CELERY_BROKER_URL,
        connect_timeout=BROKER_TIMEOUT_SECONDS,
        transport_options=getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}),
    )


def broker_ready() -> str | None:
    """The broker accepts a connection."""
    try:
        with _broker() as broker:
            broker.ensure_connection(
                max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_SECONDS
            )
    except Exception as exc:  # kombu raises the transport's own errors
        return f"unreachable ({type(exc).__name__})"
    return None


def queue_depths() -> dict[str, int]:
    """Tasks waiting in each of the product's queues; empty when the broker is out of reach."""
    depths: dict[str, int] = {}
    try:
        with _broker() as broker:
            broker.ensure_connection(
                max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_SECONDS
            )
            channel = broker.default_channel
            for queue in metrics.QUEUES:
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except ChannelError:  # never declared, or emptied and gone (Redis): none wait
                    depths[queue] = 0
    except Exception:
        return {}
    return depths


register_readiness("database", database_ready)
register_readiness("broker", broker_ready)


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer while the process serves; touches nothing else."""
    return JsonResponse({"status": "ok"})


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Ask every dependency; 503 naming those that failed."""
    results = {name: check() for name, check in _checks.items()}
    failing = [name for name, reason in results.items() if reason is not None]
    body: dict[str, object] = {
        "status": "unavailable" if failing else "ok",
        "checks": {name: reason or "ok" for name, reason in results.items()},
    }
    if failing:
        body["failing"] = failing
    return JsonResponse(body, status=503 if failing else 200)


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The Prometheus exposition; 404 when turned off, a Bearer METRICS_TOKEN when set."""
    if not settings.METRICS_ENABLED:
        return HttpResponse("not found\n", status=404, content_type="text/plain")
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            answer = HttpResponse(
                "authentication required\n", status=401, content_type="text/plain"
            )
            answer["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return answer
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            return HttpResponse("forbidden\n", status=403, content_type="text/plain")
    return HttpResponse(
        metrics.exposition(queue_depths), content_type=metrics.EXPOSITION_CONTENT_TYPE
    )
