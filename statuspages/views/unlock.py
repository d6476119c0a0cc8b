"""The password form of a password-protected status page: one correct password unlocks the
page for this browser session; guesses are throttled per client address and per page."""

import ipaddress
import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts.audit import client_ip
from healthmon.pages import safe_next
from statuspages.gates import gated_page, may_read, page_path, page_unlock
from statuspages.models import StatusPage

logger = logging.getLogger(__name__)

WRONG_PASSWORD = "That password is not right."  # noqa: S105 - a message, not a secret
_MAX_PASSWORD = 1_000  # longer input is never a page password; not worth hashing


@require_http_methods(["GET", "POST"])
def unlock(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask for the page's password; right, go back to `next` (the page by default)."""
    page = gated_page(request, slug)  # unknown or private-to-you: the gates' same 404
    target = safe_next(request, page_path(request, page))
    if may_read(request, page):  # public, a member, or already unlocked
        return HttpResponseRedirect(target)
    error, status, wait = "", 200, None
    if request.method == "POST":
        wait = unlock_retry_after(request, page)
        password = str(request.POST.get("password", ""))
        if wait is not None:
            error, status = f"Too many attempts. Try again in {wait} seconds.", 429
        elif len(password) <= _MAX_PASSWORD and page_unlock(request, page, password):
            return HttpResponseRedirect(target)
        else:
            error, status = WRONG_PASSWORD, 400
    context = {"title": page.title or page.name, "next": target, "error": error}
    response = render(request, "statuspages/unlock.html", context, status=status)
    if wait is not None:
        response["Retry-After"] = str(wait)
    response["Cache-Control"] = "private, no-store"
    return response


def _client_network(request: HttpRequest) -> str:
    """The client's address, or its /64 for IPv6: one host usually holds a whole /64, and
    counting per address would give it billions of buckets."""
    address = client_ip(request) or ""
    if ":" in address:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return address


def unlock_retry_after(request: HttpRequest, page: StatusPage) -> int | None:
    """Count an unlock attempt against its client address and against the page; the seconds
    to wait when either is over STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP / _PER_PAGE in the
    current STATUS_PAGE_UNLOCK_WINDOW_SECONDS window, else None.

    Every attempt counts (a right one too): counting before the bcrypt check is what keeps
    a burst of parallel guesses inside the limit. A failing cache lets the attempt through
    (bcrypt itself still slows guessing), as the heartbeat ping limit does.
    """
    window = settings.STATUS_PAGE_UNLOCK_WINDOW_SECONDS
    now = time.time()
    start = int(now // window) * window
    buckets = [
        (
            f"statuspages:unlock:ip:{_client_network(request)}:{start}",
            settings.STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP,
        ),
        (
            f"statuspages:unlock:page:{page.pk}:{start}",
            settings.STATUS_PAGE_UNLOCK_ATTEMPTS_PER_PAGE,
        ),
    ]
    try:
        over = [_count(key, window) > limit for key, limit in buckets]
    except Exception:  # the cache is down: do not lock readers out for it
        logger.warning("status page unlock limit skipped: the cache failed", exc_info=True)
        return None
    return int(start + window - now) + 1 if any(over) else None


def _count(bucket: str, window: int) -> int:
    """Add one to the bucket, creating it at 1 when it is new."""
    if cache.add(bucket, 1, timeout=window + 1):
        return 1
    try:
        return int(cache.incr(bucket))
    except ValueError:  # expired between the two calls
        cache.add(bucket, 1, timeout=window + 1)
        return 1
