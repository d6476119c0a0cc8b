"""The ping routes heartbeat jobs call: no login, no CSRF token, GET, HEAD and POST alike.

A ping is stored, committed, before the answer (`pipeline.heartbeats.ping_record`: one read
and one INSERT for a healthy job's success ping, one short transaction for a ping that moves
a status); the answer is a plain `OK`, or 404 `not found` with nothing written for a key no
heartbeat has, or 429 with no query at all for a key pinged faster than
`PING_RATE_PER_SECOND` (`pipeline.pingrate`).

Slug URLs, `/ping/<project ping_key>/<slug>[/<action>]`, look the heartbeat's own key up and
answer as `/ping/<its uuid>[/<action>]` does (its rate limit included, after that one lookup).
`/ping/<a>/<b>` is the UUID form when `a` is a UUID, else the slug form: a project's ping key
is never a UUID (`accounts.models.new_ping_key`).
"""

import ipaddress
import re
from uuid import UUID

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from monitoring.models import PingKind
from monitoring.slugs import heartbeat_key_for_slug
from pipeline.heartbeats import PingIn, ping_record
from pipeline.pingrate import ping_retry_after

MAX_BODY_BYTES = 100_000
_CHUNK = 64 * 1024
_EXIT_STATUS = re.compile(r"[0-9]{1,3}")  # ASCII digits only: "²".isdigit() is true
_ACTIONS = {
    "": PingKind.SUCCESS,
    "start": PingKind.START,
    "fail": PingKind.FAIL,
    "log": PingKind.LOG,
}


def _text(body: str, status: int) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="text/plain; charset=utf-8")


def _too_many(wait: int) -> HttpResponse:
    response = _text("too many pings", 429)
    response["Retry-After"] = str(wait)
    return response


def _uuid(text: str | None) -> UUID | None:
    try:
        return UUID(text) if text else None
    except ValueError:
        return None


def _kind(action: str) -> tuple[str, int | None] | None:
    """The ping's kind and exit status from the route's last part; None if unknown."""
    if action in _ACTIONS:
        return _ACTIONS[action], None
    if _EXIT_STATUS.fullmatch(action) and int(action) <= 255:
        code = int(action)
        return (PingKind.SUCCESS if code == 0 else PingKind.FAIL), code
    return None


def client_ip(request: HttpRequest) -> str | None:
    """The caller's address: with NUM_PROXIES trusted proxies in front, the address the
    outermost of them saw in X-Forwarded-For (as DRF's throttles read it), else REMOTE_ADDR."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.NUM_PROXIES and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",")]
        # The client may write anything there: a hop that is no address is not one.
        return _address(hops[-min(settings.NUM_PROXIES, len(hops))])
    return _address(request.META.get("REMOTE_ADDR", ""))


def _address(text: str) -> str | None:
    """An IP address as PostgreSQL's inet takes it (no IPv6 zone); None for anything else."""
    try:
        return str(ipaddress.ip_address(text.split("%", 1)[0]))
    except ValueError:
        return None


def _body(request: HttpRequest) -> tuple[str, int, bool]:
    """The first 100 kB of the body as text, its full size, and whether it was cut."""
    kept = request.read(MAX_BODY_BYTES + 1)
    size = len(kept)
    while chunk := request.read(_CHUNK):  # drain the rest, counting it
        size += len(chunk)
    cut = size > MAX_BODY_BYTES
    # PostgreSQL text holds no NUL: a job posting binary output keeps its ping.
    text = kept[:MAX_BODY_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return text, size, cut


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def ping(request: HttpRequest, key: str, action: str = "") -> HttpResponse:
    """Record a ping of the heartbeat whose key is `key`."""
    if (wait := ping_retry_after(key)) is not None:
        return _too_many(wait)
    ping_key, kind = _uuid(key), _kind(action)
    if ping_key is None or kind is None:
        return _text("not found", 404)
    body, size, cut = _body(request)
    # Received once the body is in: the deadline loop trusts a ping to be stored within a
    # moment of this time, however slowly a client sent its 100 kB.
    received_at = timezone.now()
    stored = ping_record(
        ping=PingIn(
            ping_key=ping_key,
            kind=kind[0],
            exit_status=kind[1],
            received_at=received_at,
            rid=_uuid(request.GET.get("rid")),
            client_ip=client_ip(request),
            method=request.method or "GET",
            user_agent=request.META.get("HTTP_USER_AGENT", "").replace("\x00", ""),
            body=body,
            body_size=size,
            body_truncated=cut,
        )
    )
    return _text("OK", 200) if stored else _text("not found", 404)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def ping_two_parts(request: HttpRequest, key: str, part: str) -> HttpResponse:
    """`/ping/<uuid>/<action>` when `key` is a UUID, else `/ping/<project ping_key>/<slug>`."""
    if _uuid(key) is not None:
        return ping(request, key, part)
    return ping_slug(request, key, part)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def ping_slug(request: HttpRequest, project_key: str, slug: str, action: str = "") -> HttpResponse:
    """Record a ping of the heartbeat named `slug` in the project whose ping key is given."""
    ping_key = heartbeat_key_for_slug(project_key=project_key, slug=slug)
    if ping_key is None:
        return _text("not found", 404)
    return ping(request, str(ping_key), action)
