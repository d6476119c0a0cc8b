"""Dashboard pages: the overview, an endpoint's page and the comparison view.

Charts are SVG drawn here on the server (`analytics.charts`); the pages need no script.
Each chart is drawn twice, for wide screens and for phones (charts.css shows one): SVG text
scales with its drawing, and only a drawing about as wide as the screen keeps it legible.
"""

import uuid
from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from accounts.access import member_required, page_user
from accounts.models import Project, User
from analytics import charts, dashboards, pings
from analytics.dashboards import OverviewFilters
from analytics.reports import MAX_COMPARED
from analytics.rows import SeriesPoint
from analytics.windows import PERIODS
from healthmon.intervals import Window
from monitoring.access import access_endpoint
from monitoring.assertion_results import assertion_results
from monitoring.certificates import certificate_standing
from monitoring.locations import default_slug
from monitoring.models import Endpoint, EndpointStatus, EndpointType
from monitoring.selectors import endpoint_choices

PERIOD_CHOICES = [
    ("1h", "1 hour"),
    ("6h", "6 hours"),
    ("24h", "24 hours"),
    ("7d", "7 days"),
    ("30d", "30 days"),
]
# The phone drawing: 320 units shown at 320-340 px on a 360-414 px screen (site.css leaves a
# chart that much), so its 11-unit text stays at 11 px or more; fewer, wider columns.
PHONE_WIDTH = 320
PHONE_COLUMNS = 120


def _period(request: HttpRequest) -> str:
    """The period asked for; anything else falls back to 24 hours."""
    period = request.GET.get("period", "24h")
    return period if period in PERIODS else "24h"


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def _filters(request: HttpRequest) -> OverviewFilters:
    """Overview filters from the query string; unknown values are ignored, not errors."""
    status = request.GET.get("status", "")
    kind = request.GET.get("type", "")
    return OverviewFilters(
        project=_uuid_or_none(request.GET.get("project", "")),
        status=status if status in EndpointStatus.values else "",
        type=kind if kind in EndpointType.values else "",
        period=_period(request),
    )


@member_required
@require_GET
def overview_page(request: HttpRequest) -> HttpResponse:
    """Every endpoint the user may see, grouped by project; refreshes every 30 s."""
    user = page_user(request)
    filters = _filters(request)
    page, groups, incidents = dashboards.overview(
        user, filters, request.GET.get("page"), timezone.now()
    )
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "page": page,
        "groups": groups,
        "incidents": incidents,
        "filters": filters,
        "projects": Project.objects.visible_to(user).order_by("name"),
        "statuses": EndpointStatus.choices,
        "types": EndpointType.choices,
        "periods": PERIOD_CHOICES,
        "query": query.urlencode(),
        "refresh": 30,
    }
    return render(request, "analytics/overview.html", context)


@member_required
@require_GET
def endpoint_page(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """One endpoint over the chosen period: response time, availability with incidents,
    SLA, rates and trends, recent checks and incidents; refreshes every 30 s."""
    user = page_user(request)
    endpoint = access_endpoint(user, endpoint_id)
    period = _period(request)
    now = timezone.now()
    data = dashboards.endpoint_detail(endpoint, period, now)
    shown, since = data["shown"], data["since"]

    def response(width: int, height: int, columns: int) -> SafeString:
        if data["locations"] is not None:
            return _by_location_chart(
                data["locations"]["series"],
                shown,
                since,
                title=f"Response time of {endpoint.name} by location",
                phone=width == PHONE_WIDTH,
            )
        return charts.response_time_chart(
            data["series"],
            start=shown.start,
            end=shown.end,
            since=since,
            title=f"Response time of {endpoint.name}",
            width=width,
            height=height,
            max_columns=columns,
            degraded=data["degraded"],
        )

    def availability(width: int, height: int) -> SafeString:
        found = data["availability"]
        return charts.availability_chart(
            found["buckets"],
            found["incidents"],
            maintenance=found["maintenance"],
            start=shown.start,
            end=shown.end,
            since=since,
            title=f"Availability of {endpoint.name}",
            width=width,
            height=height,
            degraded=data["degraded"],
        )

    context: dict[str, Any] = {
        "endpoint": endpoint,
        "period": period,
        "periods": PERIOD_CHOICES,
        "response_chart": response(960, 280, 320),
        "response_chart_phone": response(PHONE_WIDTH, 260, PHONE_COLUMNS),
        "availability_chart": availability(960, 200),
        "availability_chart_phone": availability(PHONE_WIDTH, 240),
        "refresh": 30,
        "certificate": certificate_standing(endpoint, now),
        "default_location": default_slug(),
        **data,
    }
    latest = data["checks"][0] if data["checks"] else None
    context["assertion_results"] = assertion_results(endpoint, latest)
    if endpoint.type == EndpointType.HEARTBEAT and endpoint.ping_key:
        context["heartbeat"] = pings.heartbeat_panel(endpoint, now)
    return render(request, "analytics/endpoint.html", context)


def _by_location_chart(
    series: list[tuple[str, list[SeriesPoint]]],
    shown: Window,
    since: datetime | None,
    *,
    title: str,
    phone: bool,
) -> SafeString:
    """An endpoint's locations: an average line each over the band between them (the
    first ten locations: a chart tells no more apart)."""
    drawn = series[: charts.MAX_SERIES]
    # On a phone: one legend row per series (and the band's), under the same plot.
    width, height = (PHONE_WIDTH, 240 + 16 * (len(drawn) + 1)) if phone else (960, 280)
    return charts.comparison_chart(
        drawn,
        start=shown.start,
        end=shown.end,
        since=since,
        title=title,
        band="locations",
        width=width,
        height=height,
        max_columns=PHONE_COLUMNS if phone else 320,
    )


def _compared(request: HttpRequest, user: User) -> list[Endpoint]:
    """The endpoints picked (up to 10); an id the user cannot see is a 404."""
    raw = [value for value in request.GET.getlist("endpoints") if value]
    parsed = list(dict.fromkeys(_uuid_or_none(value) for value in raw))
    ids = [endpoint_id for endpoint_id in parsed if endpoint_id is not None]
    if len(ids) != len(parsed):
        raise Http404
    if len(ids) > MAX_COMPARED:
        return []
    found = {
        endpoint.pk: endpoint
        for endpoint in Endpoint.objects.visible_to(user)
        .select_related("project")
        .defer("target", "config")
        .filter(pk__in=ids)
    }
    if len(found) != len(ids):
        raise Http404
    return [found[endpoint_id] for endpoint_id in ids]


def _compare_locations(request: HttpRequest, user: User, period: str) -> HttpResponse:
    """One endpoint's locations compared: an average line each over the band between
    them, and their figures in a table; a foreign or malformed id is a 404."""
    endpoint_id = _uuid_or_none(request.GET.get("endpoint", ""))
    if endpoint_id is None:
        raise Http404
    endpoint = access_endpoint(user, endpoint_id)
    data = dashboards.location_comparison(endpoint, period, timezone.now())
    shown, since = data["shown"], data["since"]
    title = f"Response time of {endpoint.name} by location"
    context = {
        "period": period,
        "periods": PERIOD_CHOICES,
        "by_location": True,
        "chart": _by_location_chart(data["series"], shown, since, title=title, phone=False),
        "chart_phone": _by_location_chart(data["series"], shown, since, title=title, phone=True),
        **data,
    }
    return render(request, "analytics/compare_locations.html", context)


@member_required
@require_GET
def compare_page(request: HttpRequest) -> HttpResponse:
    """Pick up to 10 endpoints: their response times on one graph, their figures in a
    table; or, with `by=location&endpoint=<id>`, one endpoint's locations side by side."""
    user = page_user(request)
    period = _period(request)
    if request.GET.get("by") == "location":
        return _compare_locations(request, user, period)
    endpoints = _compared(request, user)
    # Distinct ids, as `_compared` counts them: a repeated id is one endpoint.
    too_many = (
        len({_uuid_or_none(value) for value in request.GET.getlist("endpoints") if value})
        > MAX_COMPARED
    )
    data = dashboards.comparison(endpoints, period, timezone.now())
    chart = chart_phone = None
    if data["rows"]:
        series = [(row["name"], row["points"]) for row in data["rows"]]
        shown, since = data["shown"], data["since"]
        chart = charts.comparison_chart(series, start=shown.start, end=shown.end, since=since)
        # One legend row per series on a phone, under the same plot.
        chart_phone = charts.comparison_chart(
            series,
            start=shown.start,
            end=shown.end,
            since=since,
            width=PHONE_WIDTH,
            height=240 + 16 * len(series),
            max_columns=PHONE_COLUMNS,
        )
    context = {
        "period": period,
        "periods": PERIOD_CHOICES,
        "choices": endpoint_choices(user, request.GET.get("q", ""), [e.pk for e in endpoints]),
        "selected": {endpoint.pk for endpoint in endpoints},
        "chart": chart,
        "chart_phone": chart_phone,
        "too_many": too_many,
        "max_compared": MAX_COMPARED,
        **data,
    }
    return render(request, "analytics/compare.html", context, status=400 if too_many else 200)
