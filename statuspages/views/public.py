"""The public status page, its summary.json and its Atom and RSS feeds: no login, pages
resolved only through `statuspages.gates`, bodies served from `statuspages.cache`.

Each view is a plain `(request, slug)` function, so that a custom-domain request can be
answered by calling it with the slug of the domain's page.
"""

from datetime import timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_safe

from analytics.charts.sparklines import sparkline
from statuspages import feeds, gates
from statuspages.bars import day_bars_svg
from statuspages.cache import Rendered, cached_response
from statuspages.models import StatusPage
from statuspages.selectors import SPARKLINE_HOURS, PageView, page_view


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
                    "spark": None
                    if row.sparkline is None
                    else sparkline(row.sparkline, width=160, height=28, start=start, end=end),
                }
                for row in section.components
            ],
        }
        for section in view.sections
    ]


def _page_html(page: StatusPage) -> Rendered:
    view = page_view(page=page, now=timezone.now())
    context = {"view": view, "page": page, "sections": _sections(view)}
    # Rendered without the request: the body is shared by every reader, so it must hold
    # nothing of any one of them (no CSRF token; the subscribe form posts without one).
    body = render_to_string("statuspages/page.html", context)
    return Rendered(body.encode(), "text/html; charset=utf-8")


@require_safe
def status_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The status page."""
    page = gates.public_page(request, slug)
    return cached_response(request, page=page, fmt="html", render=lambda: _page_html(page))


@require_safe
def status_summary(request: HttpRequest, slug: str) -> HttpResponse:
    """summary.json (Atlassian Statuspage's shape)."""
    page = gates.public_page(request, slug)

    def render() -> Rendered:
        body = feeds.summary_json(page_view(page=page, now=timezone.now()))
        return Rendered(body, "application/json")

    return cached_response(request, page=page, fmt="json", render=render)


@require_safe
def status_atom(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident history as Atom."""
    page = gates.public_page(request, slug)

    def render() -> Rendered:
        body = feeds.atom_feed(page_view(page=page, now=timezone.now()))
        return Rendered(body, "application/atom+xml; charset=utf-8")

    return cached_response(request, page=page, fmt="atom", render=render)


@require_safe
def status_rss(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident history as RSS."""
    page = gates.public_page(request, slug)

    def render() -> Rendered:
        body = feeds.rss_feed(page_view(page=page, now=timezone.now()))
        return Rendered(body, "application/rss+xml; charset=utf-8")

    return cached_response(request, page=page, fmt="rss", render=render)
