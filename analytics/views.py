"""Dashboard pages: the overview, an endpoint's page and the comparison view.

Charts are SVG drawn here on the server (`analytics.charts`); the pages need no script.
Each chart is drawn twice, for wide screens and for phones (charts.css shows one): SVG text
scales with its drawing, and only a drawing about as wide as the screen keeps it legible. Both
come from one call (`charts.*_charts` with both sizes), which buckets the data once.
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
from analytics.dashboards import EndpointDetail, OverviewFilters
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
    context: dict[str, Any] = {
        "endpoint": endpoint,
        "period": period,
        "periods": PERIOD_CHOICES,
        **_endpoint_charts(endpoint, data),
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


def _endpoint_charts(endpoint: Endpoint, data: EndpointDetail) -> dict[str, SafeString]:
    """The endpoint page's response-time and availability charts, wide and for phones,
    each pair drawn from data bucketed once."""
    shown, since = data["shown"], data["since"]
    if data["locations"] is not None:
        title = f"Response time of {endpoint.name} by location"
        response = _by_location_charts(data["locations"]["series"], shown, since, title=title)
    else:
        response = charts.response_time_charts(
            data["series"],
            [charts.Size(960, 280, 320), charts.Size(PHONE_WIDTH, 260, PHONE_COLUMNS)],
            start=shown.start,
            end=shown.end,
            since=since,
            title=f"Response time of {endpoint.name}",
            degraded=data["degraded"],
        )
    found = data["availability"]
    availability = charts.availability_charts(
        found["buckets"],
        found["incidents"],
        [charts.Size(960, 200), charts.Size(PHONE_WIDTH, 240)],
        maintenance=found["maintenance"],
        start=shown.start,
        end=shown.end,
        since=since,
        title=f"Availability of {endpoint.name}",
        degraded=data["degraded"],
    )
    return {
        "response_chart": response[0],
        "response_chart_phone": response[1],
        "availability_chart": availability[0],
        "availability_chart_phone": availability[1],
    }


def _by_location_charts(
    series: list[tuple[str, list[SeriesPoint]]],
    shown: Window,
    since: datetime | None,
    *,
    title: str,
) -> list[SafeString]:
    """An endpoint's locations, wide and for phones: an average line each over the band
    between them (the first ten locations: a chart tells no more apart)."""
    drawn = series[: charts.MAX_SERIES]
    # On a phone: one legend row per series (and the band's), under the same plot.
    phone = charts.Size(PHONE_WIDTH, 240 + 16 * (len(drawn) + 1), PHONE_COLUMNS)
    return charts.comparison_charts(
        drawn,
        [charts.Size(960, 280, 320), phone],
        start=shown.start,
        end=shown.end,
        since=since,
        title=title,
        band="locations",
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
        .without_secrets()
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
    chart, chart_phone = _by_location_charts(data["series"], shown, since, title=title)
    context = {
        "period": period,
        "periods": PERIOD_CHOICES,
        "by_location": True,
        "chart": chart,
        "chart_phone": chart_phone,
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
        # One legend row per series on a phone, under the same plot.
        phone = charts.Size(PHONE_WIDTH, 240 + 16 * len(series), PHONE_COLUMNS)
        chart, chart_phone = charts.comparison_charts(
            series,
            [charts.Size(960, 320, 320), phone],
            start=shown.start,
            end=shown.end,
            since=since,
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
