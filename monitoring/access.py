"""Fetching endpoints and incidents for a caller; anything outside the projects the caller
sees is a 404 (or, in a request body, an unknown id)."""

import uuid
from collections.abc import Iterable

from accounts.access import get_all_or_invalid, get_or_404
from accounts.models import User
from monitoring.models import Endpoint, Incident, Ping


def access_endpoint(caller: User, endpoint_id: object, *, for_update: bool = False) -> Endpoint:
    """An endpoint in a project the caller can see; locked (in a transaction) to write it."""
    endpoints = Endpoint.objects.visible_to(caller)
    return get_or_404(endpoints.select_for_update() if for_update else endpoints, endpoint_id)


def access_incident(caller: User, incident_id: object) -> Incident:
    """An incident of an endpoint in a project the caller can see."""
    return get_or_404(Incident.objects.visible_to(caller), incident_id)


def access_ping(endpoint: Endpoint, ping_id: object) -> Ping:
    """A ping of that endpoint (one the caller may already see); another endpoint's is a 404."""
    return get_or_404(Ping.objects.filter(endpoint=endpoint), ping_id)


def access_endpoints(caller: User, endpoint_ids: Iterable[uuid.UUID]) -> list[Endpoint]:
    """Endpoints by id for a request body; an id the caller cannot see is a validation error."""
    visible = Endpoint.objects.visible_to(caller).without_secrets()
    return get_all_or_invalid(visible, endpoint_ids, "endpoint")
