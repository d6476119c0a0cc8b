"""monitoring's readiness check for /readyz: the dispatcher ran within the last minute."""

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from monitoring.models import Heartbeat
from monitoring.scheduler import HEARTBEAT


def dispatcher_ready() -> str | None:
    """None when a dispatcher tick finished recently, else how long it has been silent."""
    try:
        last = Heartbeat.last(HEARTBEAT)
    except DatabaseError:
        return "unknown (database unreachable)"
    if last is None:
        return "never ran"
    silent = (timezone.now() - last).total_seconds()
    if silent > settings.DISPATCHER_SILENCE_SECONDS:
        return f"silent for {int(silent)} s"
    return None
