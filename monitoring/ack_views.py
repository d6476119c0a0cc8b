"""The one-click acknowledge link of a notification, `/ack/<token>`: no login.

A GET only shows what would be acknowledged (the incident's title, endpoint names and start;
nothing else: no target, no error text, no email), with a POST button, so the link
scanners of mail systems that follow every link acknowledge nothing. The POST acknowledges
once. The token is a credential: pages answer `no-store` and send no referrer, and the
request logs mask it (`healthmon.logging`).
"""

import ipaddress
import logging
import time
from datetime import datetime

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from accounts.audit import client_ip
from healthmon.encryption import encrypted_fields
from monitoring.acknowledgement import ack_token_incident_id, incident_acknowledge
from monitoring.errors import IncidentResolved
from monitoring.incidents import incident_title
from monitoring.models import AckVia, Endpoint, Incident

logger = logging.getLogger(__name__)

# Acknowledge POSTs a client address (its /64 for IPv6) may make per window.
ACK_POSTS_PER_IP = 20
ACK_WINDOW_SECONDS = 600

INVALID = "This acknowledge link is not valid. It may have been copied incompletely."
RESOLVED = "This incident is resolved: its acknowledge link has expired."
ALREADY = "This incident was already acknowledged at {at:%Y-%m-%d %H:%M} UTC."


def _client_network(request: HttpRequest) -> str:
    """The client's address, or its /64 for IPv6 (one host usually holds a whole /64)."""
    address = client_ip(request) or ""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:  # a malformed forwarded address: counted as written
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)  # an IPv4 client of a dual-stack server
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def ack_retry_after(request: HttpRequest) -> int | None:
    """Count an acknowledge POST against its client's address; the seconds to wait when it
    is over ACK_POSTS_PER_IP in the current window, else None (a failing cache lets it
    through: the token, not the count, is what protects an incident)."""
    now = time.time()
    start = int(now // ACK_WINDOW_SECONDS) * ACK_WINDOW_SECONDS
    bucket = f"monitoring:ack:ip:{_client_network(request)}:{start}"
    try:
        if cache.add(bucket, 1, timeout=ACK_WINDOW_SECONDS + 1):
            count = 1
        else:
            count = int(cache.incr(bucket))
    except Exception:
        logger.warning("acknowledge link limit skipped: the cache failed", exc_info=True)
        return None
    if count <= ACK_POSTS_PER_IP:
        return None
    return int(start + ACK_WINDOW_SECONDS - now) + 1


def _endpoint_names(incident: Incident) -> list[str]:
    """The measured endpoint's name, or the declared incident's endpoints' names."""
    if incident.endpoint_id is not None:
        return [incident.measured_endpoint.name]
    return list(incident.endpoints.order_by("name").values_list("name", flat=True))


def _page(
    request: HttpRequest,
    *,
    incident: Incident | None,
    message: str = "",
    status: int = 200,
    confirm: bool = False,
) -> HttpResponse:
    """The link's page: the incident's facts (when known), a message, the button."""
    context = {
        "incident": incident,
        "title": incident_title(incident) if incident else "Acknowledge link",
        "endpoint_names": _endpoint_names(incident) if incident else [],
        "message": message,
        "confirm": confirm,
        "error": status >= 400,
    }
    response = render(request, "monitoring/ack.html", context, status=status)
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex"
    return response


def _refusal(request: HttpRequest, incident: Incident) -> HttpResponse | None:
    """The page for an incident the link can no longer acknowledge, else None."""
    if incident.acknowledged_at is not None:
        message = ALREADY.format(at=incident.acknowledged_at)
        return _page(request, incident=incident, message=message, status=409)
    if incident.resolved_at is not None:
        return _page(request, incident=incident, message=RESOLVED, status=410)
    return None


def _acknowledged_at(incident: Incident) -> datetime:
    """When the incident was acknowledged (set once the service returned)."""
    assert incident.acknowledged_at is not None  # noqa: S101 - the service set it
    return incident.acknowledged_at


# No CSRF check: nobody is signed in here, so a forged request could do no more than its
# sender, who would need the token anyway; and the page sends no referrer (the token is in
# its URL), which makes browsers post `Origin: null`, which Django's check refuses.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def ack(request: HttpRequest, token: str) -> HttpResponse:
    """GET: ask to confirm (changes nothing). POST: acknowledge once, without a login."""
    if request.method == "POST" and (wait := ack_retry_after(request)) is not None:
        message = f"Too many attempts. Try again in {wait} seconds."
        response = _page(request, incident=None, message=message, status=429)
        response["Retry-After"] = str(wait)
        return response
    incident_id = ack_token_incident_id(token)
    incident = (
        # The page names the endpoint: its target and config are not decrypted for that.
        Incident.objects.select_related("endpoint")
        .defer(*encrypted_fields(Endpoint, "endpoint"))
        .filter(pk=incident_id)
        .first()
        if incident_id
        else None
    )
    if incident is None:
        return _page(request, incident=None, message=INVALID, status=404)
    refused = _refusal(request, incident)
    if refused is not None or request.method == "GET":
        return refused or _page(request, incident=incident, confirm=True)
    try:
        done = incident_acknowledge(incident=incident, by=None, via=AckVia.LINK)
    except IncidentResolved:
        return _page(request, incident=incident, message=RESOLVED, status=410)
    if not done.acknowledged_now:  # someone else was faster
        return _refusal(request, incident) or _page(request, incident=incident, status=409)
    message = f"Acknowledged at {_acknowledged_at(incident):%Y-%m-%d %H:%M} UTC: escalation stops."
    return _page(request, incident=incident, message=message)
