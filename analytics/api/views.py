"""Analytics API: summary, response time, uptime, availability, errors, SLA, comparison."""

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import renderers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import access_project, get_or_404
from accounts.models import Project
from accounts.permissions import caller
from analytics import locations, reports
from analytics.api import serializers as shapes
from analytics.api.params import Query, QuerySerializer
from analytics.api.renderers import CSVRenderer
from analytics.windows import BUCKETS, PERIODS
from apikeys.models import Scope
from healthmon.api.errors import ProblemJSONRenderer
from healthmon.api.pagination import PageNumberPagination
from healthmon.intervals import Window
from monitoring.locations import endpoint_slugs
from monitoring.models import Endpoint

_RANGE = [
    OpenApiParameter("from", OpenApiTypes.DATETIME, description="Start (ISO 8601, UTC)."),
    OpenApiParameter("to", OpenApiTypes.DATETIME, description="End (ISO 8601; default now)."),
    OpenApiParameter("period", str, enum=list(PERIODS), description="Default 24h."),
    OpenApiParameter("endpoint", OpenApiTypes.UUID, description="Only this endpoint."),
    OpenApiParameter("project", OpenApiTypes.UUID, description="Only this project."),
    OpenApiParameter("group_by", str, enum=["endpoint", "project"]),
]
# The routes answering group_by=location: per-location figures come from raw checks, which
# say nothing of time-weighted availability or SLA (incidents belong to the endpoint).
BY_LOCATION = ("summary", "response_time", "uptime")
# group_by and location= on the routes answering per-location figures.
_BY_LOCATION = [
    OpenApiParameter(
        "group_by",
        str,
        enum=["endpoint", "project", "location"],
        description="location: per endpoint and location, from raw checks kept "
        "RAW_RETENTION_DAYS; the answer's `coverage` says what they cover.",
    ),
    OpenApiParameter(
        "location",
        str,
        description="A location's slug: only its checks (implies group_by=location).",
    ),
]
_BUCKET = OpenApiParameter("bucket", str, enum=["5m", "1h", "1d"])
_CSV = OpenApiParameter("format", str, enum=["json", "csv"], description="csv: one row per point.")
_TARGET = OpenApiParameter("target", str, enum=["99.9", "99.95", "99.99"])
_ENDPOINTS = OpenApiParameter(
    "endpoints", str, required=True, description="Comma-separated endpoint ids (1 to 10)."
)
_WITH_CSV = [renderers.JSONRenderer, ProblemJSONRenderer, CSVRenderer]
_IDENTITY = ["endpoint", "project", "name"]
# Points one answer may hold across its series: ~6 MB of JSON.
MAX_POINTS_PER_ANSWER = 50_000

CSV_COLUMNS = {
    "response_time": [*_IDENTITY, "t", "avg_ms", "min_ms", "max_ms", "p95_ms", "count", "failures"],
    "sla": [
        *_IDENTITY,
        "sla_target",
        "checks",
        "watched_s",
        "target",
        "tier",
        "uptime",
        "allowed_downtime_month_s",
        "allowed_downtime_year_s",
        "allowed_downtime_s",
        "downtime_s",
        "budget_remaining_s",
        "compliant",
    ],
}


# Per-location figures are tallied from raw checks (analytics.locations): a page of them
# covers at most this many endpoints, so one request reads a bounded number of rows.
LOCATION_PAGE_SIZE = 50


class AnalyticsPagination(PageNumberPagination):
    """Pages of endpoints (or projects), with the resolved range beside the results."""

    def get_page_size(self, request: Request) -> int:
        """As every page, and at most LOCATION_PAGE_SIZE endpoints per location page."""
        size = super().get_page_size(request)
        params = request.query_params
        if (params.get("group_by") == "location" or "location" in params) and size > (
            LOCATION_PAGE_SIZE
        ):
            raise ValidationError(
                {"page_size": [f"At most {LOCATION_PAGE_SIZE} with per-location figures."]}
            )
        return size

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The page plus `from`, `to` and `bucket`."""
        paged = super().get_paginated_response_schema(schema)
        paged["properties"].update(
            {
                "from": {"type": "string", "format": "date-time"},
                "to": {"type": "string", "format": "date-time"},
                "bucket": {"type": "string", "enum": ["5m", "1h", "1d"]},
                "coverage": {
                    "type": "object",
                    "description": "With group_by=location: `since`, the oldest moment raw "
                    "checks are kept for (or the range's start), and `partial`, true when the "
                    "range starts before it.",
                    "properties": {
                        "since": {"type": "string", "format": "date-time"},
                        "partial": {"type": "boolean"},
                    },
                },
            }
        )
        return paged


def _report(
    summary: str, serializer: type, *extra: OpenApiParameter, by_location: type | None = None
) -> Callable:
    """The schema of a paged report; `by_location`: the rows it answers with
    group_by=location (then its group_by takes `location`, and `location=` is described)."""
    body: Any = serializer(many=True)
    params = [*_RANGE, *extra]
    if by_location is not None:
        body = PolymorphicProxySerializer(
            component_name=f"{serializer.__name__.removesuffix('Serializer')}OrLocation",
            serializers=[serializer, by_location],
            resource_type_field_name=None,
            many=True,
        )
        params = [*_RANGE[:-1], *_BY_LOCATION, *extra]
    responses: dict[Any, Any] = {200: body}
    if _CSV in extra:
        responses = {
            (200, "application/json"): body,
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR, description="One row per point or tier, with a header row."
            ),
        }
    return extend_schema(summary=summary, parameters=params, responses=responses)


def _check_points(query: Query, series: int) -> None:
    """Refuse an answer of more than MAX_POINTS_PER_ANSWER points across its series."""
    points = math.ceil(query.window.seconds / BUCKETS[query.bucket].total_seconds()) + 1
    if series * points > MAX_POINTS_PER_ANSWER:
        raise ValidationError(
            {
                "bucket": [
                    f"{series} series of {points} points exceed {MAX_POINTS_PER_ANSWER:,}"
                    " points: choose a larger bucket or a smaller page_size."
                ]
            }
        )


def _listed(endpoints: Sequence[Endpoint]) -> int:
    """The locations the endpoints list (the default one for those listing none)."""
    return sum(len(endpoint_slugs(endpoint)) for endpoint in endpoints)


@extend_schema(tags=["analytics"])
class AnalyticsViewSet(viewsets.GenericViewSet):
    """Read-only analytics over the endpoints the caller can see."""

    read_scope = Scope.ANALYTICS_READ
    pagination_class = AnalyticsPagination
    schema_error_codes = ("400", "404")  # invalid parameters; a foreign endpoint or project
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[Endpoint]:
        """Visible endpoints (schema generation sees none)."""
        if getattr(self, "swagger_fake_view", False):
            return Endpoint.objects.none()
        # The reports' columns, and the locations a per-location report is about.
        fields = (*reports.REPORT_FIELDS, "locations")
        return Endpoint.objects.visible_to(caller(self.request)).only(*fields)

    @property
    def csv_columns(self) -> list[str] | None:
        """The CSV header of this action (one row per point or tier); per-location rows
        say their location after what they are about."""
        columns = CSV_COLUMNS.get(self.action or "")
        params = self.request.query_params
        if columns and (params.get("group_by") == "location" or "location" in params):
            return [*_IDENTITY, "location", *columns[len(_IDENTITY) :]]
        return columns

    def handle_exception(self, exc: Exception) -> Response:
        """Errors stay problem+json even when CSV was asked for."""
        if isinstance(getattr(self.request, "accepted_renderer", None), CSVRenderer):
            self.request.accepted_renderer = renderers.JSONRenderer()
        return super().handle_exception(exc)

    def _query(self) -> Query:
        params = QuerySerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        query: Query = params.validated_data["query"]
        if query.group_by == "location" and self.action not in BY_LOCATION:
            field = "group_by" if "group_by" in self.request.query_params else "location"
            raise ValidationError(
                {field: ["Per-location figures are answered by summary, response-time and uptime."]}
            )
        return query

    def _items(self, query: Query) -> reports.Items:
        """The page of endpoints (or projects) the report covers; a foreign id is a 404."""
        user = caller(self.request)
        endpoints = self.get_queryset()
        if query.endpoint is not None:
            endpoint = get_or_404(endpoints, query.endpoint)  # another's is a 404
            if query.project is None and query.group_by in ("endpoint", "location"):
                # The endpoint read to check access is the page: it is not read again.
                return reports.Items("endpoint", self.paginate_queryset([endpoint]) or [])
            endpoints = endpoints.filter(pk=endpoint.pk)
        if query.project is not None:
            endpoints = endpoints.filter(project=access_project(user, query.project))
        if query.group_by in ("endpoint", "location"):
            return reports.Items("endpoint", self.paginate_queryset(endpoints) or [])
        projects = Project.objects.visible_to(user)
        if query.project is not None:
            projects = projects.filter(pk=query.project)
        if query.endpoint is not None:
            projects = projects.filter(endpoints__pk=query.endpoint)
        page = self.paginate_queryset(projects) or []
        return reports.Items("project", list(endpoints.filter(project__in=page)), page)

    def _series_items(self, query: Query) -> reports.Items:
        """The page of a route answering series: their points together stay bounded."""
        items = self._items(query)
        _check_points(query, len(items.rows()))
        return items

    def _page(
        self, query: Query, rows: Sequence[Mapping[str, object]], covered: Window | None = None
    ) -> Response:
        """A page of rows with the resolved range; per-location rows also say what raw
        checks cover of `covered` (the span they were read over)."""
        response = self.get_paginated_response(rows)
        response.data.update(
            {"from": query.window.start, "to": query.window.end, "bucket": query.bucket}
        )
        if query.group_by == "location":
            response.data["coverage"] = locations.raw_coverage(covered or query.window, query.now)
        return response

    @_report(
        "Per endpoint: response time, rates and uptime",
        shapes.SummarySerializer,
        by_location=shapes.LocationSummarySerializer,
    )
    @action(detail=False)
    def summary(self, request: Request) -> Response:
        """Latency (avg/min/max/p50/p95/p99), success and error rate over the range, and
        time-weighted uptime over 24 h, 7 d and 30 d up to its end."""
        query = self._query()
        if query.group_by == "location":
            endpoints = self._items(query).endpoints
            return self._page(query, locations.summary(endpoints, query.window, query.location))
        rows = reports.summary(self._items(query), query.window, query.now)
        return self._page(query, rows)

    @_report(
        "Response-time series",
        shapes.SeriesSerializer,
        _BUCKET,
        _CSV,
        by_location=shapes.LocationSeriesSerializer,
    )
    @action(detail=False, url_path="response-time", renderer_classes=_WITH_CSV)
    def response_time(self, request: Request) -> Response:
        """Per endpoint (or project), one point per bucket: avg, min, max, p95, count."""
        query = self._query()
        if query.group_by == "location":
            endpoints = self._items(query).endpoints
            # Each endpoint's locations are series: their points together stay bounded.
            _check_points(query, 1 if query.location is not None else _listed(endpoints))
            width = BUCKETS[query.bucket]
            found = locations.series(endpoints, query.window, width, query.location)
            return self._page(query, found)
        rows = reports.response_time(self._series_items(query), query.window, query.bucket)
        return self._page(query, rows)

    @_report(
        "Uptime over 24 h, 7 d and 30 d",
        shapes.UptimeSerializer,
        by_location=shapes.LocationUptimeSerializer,
    )
    @action(detail=False)
    def uptime(self, request: Request) -> Response:
        """Time-weighted uptime with the check-count success rate beside it."""
        query = self._query()
        end = min(query.window.end, query.now)
        if query.group_by == "location":
            endpoints = self._items(query).endpoints
            found = locations.uptime(endpoints, end, query.location)
            return self._page(query, found, Window(end - PERIODS["30d"], end))
        rows = reports.uptime(self._items(query), query.window.end, query.now)
        return self._page(query, rows)

    @_report(
        "Availability per bucket, with downtime incidents", shapes.AvailabilitySerializer, _BUCKET
    )
    @action(detail=False)
    def availability(self, request: Request) -> Response:
        """Uptime % per bucket over the range and the incidents inside it."""
        query = self._query()
        rows = reports.availability(
            self._series_items(query), query.window, query.bucket, query.now
        )
        return self._page(query, rows)

    @_report("Failures, error rate, trend and top causes", shapes.ErrorsSerializer, _BUCKET)
    @action(detail=False)
    def errors(self, request: Request) -> Response:
        """Error rate over the range against the period before it, per bucket, and causes."""
        query = self._query()
        rows = reports.errors(self._series_items(query), query.window, query.bucket, query.now)
        return self._page(query, rows)

    @_report("SLA compliance, three tiers side by side", shapes.SlaSerializer, _TARGET, _CSV)
    @action(detail=False, renderer_classes=_WITH_CSV)
    def sla(self, request: Request) -> Response:
        """Uptime over the range (default 24 h; use period=30d for the month) per tier."""
        query = self._query()
        rows = reports.sla(self._items(query), query.window, query.now, query.targets)
        return self._page(query, rows)

    @extend_schema(
        summary="Several endpoints side by side",
        parameters=[_ENDPOINTS, *_RANGE[:3], _BUCKET],
        responses={200: shapes.CompareResponseSerializer},
    )
    @action(detail=False, pagination_class=None)
    def compare(self, request: Request) -> Response:
        """Summary figures, SLA at each one's target, and series, in the order asked."""
        query = self._query()
        if not query.endpoints:
            raise ValidationError({"endpoints": ["This parameter is required."]})
        _check_points(query, len(query.endpoints))
        found = self.get_queryset().in_bulk(query.endpoints)
        if len(found) != len(query.endpoints):
            raise NotFound()
        endpoints = [found[pk] for pk in query.endpoints]
        rows = reports.compare(endpoints, query.window, query.bucket, query.now)
        return Response(
            {
                "from": query.window.start,
                "to": query.window.end,
                "bucket": query.bucket,
                "results": rows,
            }
        )
