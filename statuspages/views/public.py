"""The public status page, its summary.json and its Atom and RSS feeds: no login, pages
resolved only through `statuspages.gates`, bodies served from `statuspages.cache`.

Each view is a plain `(request, slug)` function, so that a custom-domain request is
answered by calling it with the slug of the domain's page (`statuspages.domain_urls`).
"""

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_safe

from analytics.charts.sparklines import sparkline
from analytics.rows import SeriesPoint
from statuspages import feeds, gates
from statuspages.bars import day_bars_svg
from statuspages.cache import Rendered, cached_response
from statuspages.models import StatusPage
from statuspages.selectors import SPARKLINE_HOURS, PageView, page_view

_LINKS = {
    "page": "",
    "summary": "summary.json",
    "atom": "history.atom",
    "rss": "history.rss",
    "subscribe": "subscribe",
}


def _spark(points: list[SeriesPoint] | None, start: datetime, end: datetime) -> SafeString | None:
    """A component's response-time sparkline; none when the page hides response times or
    nothing was measured in the window (an empty chart under its caption reads as broken)."""
    if not points or all(point["avg_ms"] is None for point in points):
        return None
    return sparkline(points, width=160, height=28, start=start, end=end)


def _sections(view: PageView) -> list[dict[str, Any]]:
    """Sections with each component's day bars and sparkline drawn (SVG)."""
    end, start = view.now, view.now - timedelta(hours=SPARKLINE_HOURS)
    days = [f"{day:%d %b %Y}" for day in view.days]
    return [
        {
            "name": section.name,
            "items": [
                {
                    "row": row,
                    "bars": day_bars_svg(row, days),
                    "spark": _spark(row.sparkline, start, end),
                }
                for row in section.components
            ],
        }
        for section in view.sections
    ]


def _page_html(page: StatusPage, links: dict[str, str]) -> Rendered:
    view = page_view(page=page, now=timezone.now())
    context = {
        "view": view,
        "page": page,
        "sections": _sections(view),
        "links": links,
        "subscribe_path": links["subscribe"],
    }
    # Rendered without the request: the body is shared by every reader, so it must hold
    # nothing of any one of them (no CSRF token; the subscribe POST is CSRF-exempt).
    body = render_to_string("statuspages/page.html", context)
    return Rendered(body.encode(), "text/html; charset=utf-8")


def _format(request: HttpRequest, page: StatusPage, name: str) -> str:
    """The cache's name for a format: links differ on the page's custom domain."""
    return f"{name}@domain" if gates.domain_slug(request) == page.slug else name


@gates.page_view
@require_safe
def page(request: HttpRequest, slug: str) -> HttpResponse:
    """The status page."""
    status_page = gates.public_page(request, slug)
    links = {key: gates.page_path(request, status_page, path) for key, path in _LINKS.items()}
    return cached_response(
        request,
        page=status_page,
        fmt=_format(request, status_page, "html"),
        render=lambda: _page_html(status_page, links),
    )


def _served(
    request: HttpRequest,
    slug: str,
    fmt: str,
    write: Callable[[PageView], bytes],
    content_type: str,
) -> HttpResponse:
    """One machine-read format of a page (JSON, Atom, RSS), written from its view and served
    from the cache."""
    status_page = gates.public_page(request, slug)

    def render() -> Rendered:
        return Rendered(write(page_view(page=status_page, now=timezone.now())), content_type)

    return cached_response(request, page=status_page, fmt=fmt, render=render)


@gates.data_view
@require_safe
def summary(request: HttpRequest, slug: str) -> HttpResponse:
    """summary.json (Atlassian Statuspage's shape)."""
    return _served(request, slug, "json", feeds.summary_json, "application/json")


@gates.data_view
@require_safe
def atom(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident history as Atom."""
    return _served(request, slug, "atom", feeds.atom_feed, "application/atom+xml; charset=utf-8")


@gates.data_view
@require_safe
def rss(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident history as RSS."""
    return _served(request, slug, "rss", feeds.rss_feed, "application/rss+xml; charset=utf-8")
