"""Badges, no login: `/badge/<badge_key>/{status,uptime,response-time}.{svg,json}`.

The key is the only secret and names nothing else: a badge shows fixed words and figures
under a fixed label ("status", "uptime 30d", "response time") unless the embedder picks its
own with `?label=`; never the endpoint's or page's name. Endpoint badges are always served
(whoever has the key may see them); a page's only while the page is public, and its
response time only while the page shows response times. Everything else, an unknown key
included, gets the same 404.

Answers are computed at most once per `CACHE_SECONDS` per badge (Django's cache: Redis in
production), so a README viewed by a crowd costs the database little; clients may keep
them `MAX_AGE` seconds and then revalidate with the ETag or Last-Modified (when the badge
last said something else: kept with the computed answer, so it stays put while the words do).
"""

import json
import logging
import re
import time
import unicodedata
from dataclasses import replace

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.cache import get_conditional_response, set_response_etag
from django.utils.http import http_date
from django.views.decorators.http import require_http_methods

from healthmon.errors import PROBLEM_CONTENT_TYPE, ErrorCode, InvalidInput, problem
from statuspages import badge_figures as figures
from statuspages.badges import Badge

logger = logging.getLogger(__name__)
# A state change shows on a badge within CACHE_SECONDS + MAX_AGE = 10 s, as on the page.
CACHE_SECONDS = 5  # how stale a computed badge may be here
MAX_AGE = 5  # shields.io, GitHub's image proxy and browsers keep a badge this long
# How long a computed badge is kept past its freshness: what it said, and since when,
# tell whether a badge computed again changed.
KEEP_SECONDS = 3600
_ENTRY_LENGTH = 5  # label, message, colour, computed at, modified at (epoch seconds)
MAX_LABEL_LENGTH = 40
SVG_CONTENT_TYPE = "image/svg+xml"
# What `statuspages.models`'s keys look like (`token_urlsafe(16)`), loosely: anything else
# is refused before any query, and never becomes part of a cache key.
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_FOUND = Badge("badge", "not found", "lightgrey")


@require_http_methods(["GET", "HEAD"])
def badge(request: HttpRequest, badge_key: str, kind: str, fmt: str) -> HttpResponse:
    """One badge, as SVG or as shields.io endpoint JSON."""
    try:
        period, label = _query(request, kind)
    except InvalidInput as exc:
        return _invalid(exc)
    figure = _figure(badge_key, kind, period) if _KEY.fullmatch(badge_key) else None
    if figure is None:
        return _not_found(fmt)
    found, modified = figure
    if label:
        found = replace(found, label=label)
    return _answer(request, found, fmt, modified)


def _query(request: HttpRequest, kind: str) -> tuple[str, str]:
    """The uptime period (empty for other kinds) and the label asked for (empty for the
    default), or every problem with them at once."""
    errors: dict[str, str] = {}
    period = ""
    if kind == "uptime":
        period = request.GET.get("period", figures.DEFAULT_UPTIME_PERIOD)
        if period not in figures.UPTIME_PERIODS:
            errors["period"] = f"Must be one of {', '.join(figures.UPTIME_PERIODS)}."
    label = request.GET.get("label", "").strip()
    if len(label) > MAX_LABEL_LENGTH:
        errors["label"] = f"At most {MAX_LABEL_LENGTH} characters."
    elif any(unicodedata.category(char).startswith("C") for char in label):
        # Control and format characters (bidi overrides among them) have no place in a
        # badge, and some are not even allowed in XML.
        errors["label"] = "Printable characters only."
    if errors:
        raise InvalidInput(errors)
    return period, label


def _figure(badge_key: str, kind: str, period: str) -> tuple[Badge, int] | None:
    """The badge under its default label and since when it says what it says (epoch
    seconds, for Last-Modified), from the cache when computed lately; computed afresh,
    uncached, while the cache is down."""
    cache_key = badge_cache_key(kind, period, badge_key)
    try:
        cached = cache.get(cache_key)
    except Exception:  # the cache is down: a badge still answers, from the database
        logger.warning("badge cache read failed", exc_info=True)
        found = _compute(badge_key, kind, period)
        return None if found is None else (found, int(time.time()))
    if cached is not None and len(cached) != _ENTRY_LENGTH:
        cached = None  # written by an older release
    # The entry says when it was computed: its age is judged by our clock, not only by the
    # store's expiry (Redis keeps time of its own).
    if cached is not None and 0 <= time.time() - cached[3] < CACHE_SECONDS:
        return Badge(*cached[:3]), cached[4]
    found = _compute(badge_key, kind, period)
    # Not found is not cached: a page made public shows at once, and unknown keys
    # cannot fill the cache.
    if found is None:
        return None
    now = time.time()
    # A badge computed anew that says the same keeps its Last-Modified: If-Modified-Since
    # stays honest (and answered with 304) while nothing changes.
    same = cached is not None and Badge(*cached[:3]) == found
    modified = cached[4] if same else int(now)
    try:
        entry = (found.label, found.message, found.color, now, modified)
        cache.set(cache_key, entry, KEEP_SECONDS)
    except Exception:
        logger.warning("badge cache write failed", exc_info=True)
    return found, modified


def badge_cache_key(kind: str, period: str, badge_key: str) -> str:
    """Where a badge's computed answer is kept (`period` is empty but for uptime)."""
    return f"badge:{kind}:{period}:{badge_key}"


def _compute(badge_key: str, kind: str, period: str) -> Badge | None:
    subject = figures.subject_for_key(badge_key)
    if subject is None:
        return None
    now = timezone.now()
    if kind == "status":
        return figures.status_badge(subject, now)
    if kind == "uptime":
        return figures.uptime_badge(subject, period, now)
    if subject.page is not None and not subject.page.show_response_times:
        return None
    return figures.response_time_badge(subject, now)


def _answer(request: HttpRequest, found: Badge, fmt: str, modified: int) -> HttpResponse:
    """The badge with cache headers, an ETag and Last-Modified; 304 when the client holds
    it already (by If-None-Match, else by If-Modified-Since)."""
    response = _render(found, fmt, 200)
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    response["Last-Modified"] = http_date(modified)
    set_response_etag(response)
    return (
        get_conditional_response(
            request, etag=response["ETag"], last_modified=modified, response=response
        )
        or response
    )


def _render(found: Badge, fmt: str, status: int) -> HttpResponse:
    if fmt == "svg":
        response = HttpResponse(found.as_svg(), status=status, content_type=SVG_CONTENT_TYPE)
    else:
        response = HttpResponse(
            json.dumps(found.as_json()), status=status, content_type="application/json"
        )
        # Public figures without cookies: browser-side tools may read them too.
        response["Access-Control-Allow-Origin"] = "*"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _not_found(fmt: str) -> HttpResponse:
    """An image still, for an `<img>` in a README; problem details for JSON readers."""
    if fmt == "svg":
        response = _render(_NOT_FOUND, fmt, 404)
    else:
        body = problem(404, ErrorCode.NOT_FOUND, "No such badge.")
        response = JsonResponse(body, status=404, content_type=PROBLEM_CONTENT_TYPE)
        response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    return response


def _invalid(exc: InvalidInput) -> HttpResponse:
    """400 problem details naming every bad parameter."""
    body = problem(400, ErrorCode.VALIDATION_ERROR, exc.detail)
    body["errors"] = exc.errors
    response = JsonResponse(body, status=400, content_type=PROBLEM_CONTENT_TYPE)
    response["X-Content-Type-Options"] = "nosniff"
    return response
