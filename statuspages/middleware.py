"""Custom domains: a request sent to a status page's own host name is served that page's
public routes at the root, and nothing else of the app.

Host validation stays on: a host that is neither in ALLOWED_HOSTS nor a registered
`StatusPage.custom_domain` still meets Django's DisallowedHost (400). Only for a registered
domain does the middleware accept the host for this one request (`request.get_host`) and
switch the request to `statuspages.domain_urls`, which routes only the page's public views.
It must come first in MIDDLEWARE: every later middleware (CommonMiddleware, CSRF, the
security redirect) asks `request.get_host()`.
"""

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host

from statuspages.models import StatusPage

logger = logging.getLogger(__name__)

DOMAIN_URLCONF = "statuspages.domain_urls"
_CACHE_PREFIX = "statuspages:domain:"
_MAX_DOMAIN = 253  # RFC 1035; longer names are never registered


class CustomDomainMiddleware:
    """Serve a registered custom domain's status page; leave every other host to Django."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The very host HttpRequest.get_host checks (X-Forwarded-Host under USE_X_FORWARDED_HOST).
        raw_host = request._get_raw_host()  # type: ignore[attr-defined]
        domain, _port = split_domain_port(raw_host)
        if domain and not validate_host(domain, _allowed_hosts()):
            slug = domain_page_slug(domain)
            if slug:
                _serve_domain(request, raw_host, slug)
        return self.get_response(request)


def _serve_domain(request: HttpRequest, raw_host: str, slug: str) -> None:
    """Accept this request's host and route it to the page's public views only."""
    request.status_domain_slug = slug  # type: ignore[attr-defined]
    request.urlconf = DOMAIN_URLCONF

    def get_host() -> str:
        """The custom domain, accepted for this request only (see the module docstring)."""
        return raw_host

    # An instance attribute: Django's own HttpRequest.get_host stays untouched for others.
    setattr(request, "get_host", get_host)  # noqa: B010 - mypy forbids assigning a method


def _allowed_hosts() -> list[str]:
    """ALLOWED_HOSTS as HttpRequest.get_host reads it (its DEBUG fallback included)."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return allowed


def domain_page_slug(domain: str) -> str | None:
    """The slug of the page registered for `domain` (lowercase, no port), else None.

    Answers, negative ones included, are cached for STATUS_PAGE_DOMAIN_CACHE_SECONDS: a
    stream of requests for an unknown host costs one query, not one per request. A failing
    cache falls back to the database rather than refusing a registered domain.
    """
    if not domain or len(domain) > _MAX_DOMAIN:
        return None
    key = _CACHE_PREFIX + domain
    try:
        cached = cache.get(key)
    except Exception:  # the cache is down: ask the database each time instead
        logger.warning("custom domain lookup skipped the cache: it failed", exc_info=True)
        return _lookup(domain) or None
    if cached is None:
        cached = _lookup(domain)
        try:
            cache.set(key, cached, timeout=settings.STATUS_PAGE_DOMAIN_CACHE_SECONDS)
        except Exception:
            logger.warning("custom domain lookup not cached: the cache failed", exc_info=True)
    return cached or None


def domain_cache_forget(*domains: str | None) -> None:
    """Drop cached answers for these domains (a page's domain set, changed or removed), so
    the change shows at once instead of within STATUS_PAGE_DOMAIN_CACHE_SECONDS."""
    keys = [_CACHE_PREFIX + d.lower() for d in domains if d]
    if keys:
        cache.delete_many(keys)


def _lookup(domain: str) -> str:
    """The page slug for a domain, "" when none (cached as the negative answer)."""
    slug = StatusPage.objects.filter(custom_domain=domain).values_list("slug", flat=True).first()
    return slug or ""
