"""The Prometheus metrics every process records into, and their exposition.

prometheus-client runs in multiprocess mode: each process (gunicorn workers, Celery workers,
beat) writes its samples to memory-mapped files in PROMETHEUS_MULTIPROC_DIR (settings make
it and point the library at it before this module is imported), and `/metrics` sums the
files of every process on the machine. The stages that know a fact record it (the
dispatcher, the pipeline's store stage, the deliveries, the HTTP middleware); this module
imports no app, so every layer may record into it.
"""

import math
import re
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

CHECKS = Counter(
    "healthmon_checks_total", "Checks stored, by endpoint type and result.", ["type", "result"]
)
CHECK_DURATION = Histogram(
    "healthmon_check_duration_seconds",
    "Time a stored check took (the whole exchange), by endpoint type.",
    ["type"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
# A gauge of the last tick: whichever process dispatched last tells the truth.
DISPATCH_LAG = Gauge(
    "healthmon_dispatcher_lag_seconds",
    "How late the latest dispatcher tick claimed its most overdue slot.",
    multiprocess_mode="mostrecent",
)
DISPATCH_CLAIMED = Histogram(
    "healthmon_dispatcher_claimed_per_tick",
    "Endpoints the dispatcher claimed in one tick.",
    buckets=(0, 1, 10, 100, 1000, 10_000, 100_000),
)
DELIVERIES = Counter(
    "healthmon_deliveries_total",
    "Notification delivery attempts, by outcome (delivered, retry, failed).",
    ["outcome"],
)
HTTP_REQUESTS = Counter(
    "healthmon_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    "healthmon_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template.",
    ["route"],
)
QUEUES = ("celery", "slow", "dispatch")
EXPOSITION_CONTENT_TYPE = CONTENT_TYPE_LATEST
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}  # any other: "other"
UNMATCHED = "unmatched"  # a 404 outside every route: one label, not one per URL tried


def checks_observed(*, kinds: Sequence[tuple[str, bool, float | None]]) -> None:
    """Count stored checks, given as (endpoint type, ok, response time in ms or None);
    a check with no time counts but adds nothing to the duration histogram."""
    # Counted per (type, result) and timed per type: a batch has few of them, and looking
    # the labelled child up per check cost more than counting.
    counts: dict[tuple[str, bool], int] = {}
    times: dict[str, list[float]] = {}
    for kind, ok, response_time_ms in kinds:
        counts[kind, ok] = counts.get((kind, ok), 0) + 1
        if response_time_ms is not None:
            times.setdefault(kind, []).append(max(response_time_ms, 0.0) / 1000)
    for (kind, ok), count in counts.items():
        CHECKS.labels(type=kind, result="ok" if ok else "failed").inc(count)
    for kind, seconds in times.items():
        observe_each(CHECK_DURATION.labels(type=kind), seconds)


def observe_each(child: Any, values: Sequence[float]) -> None:
    """`child.observe(value)` for each value (`child`: a labelled Histogram), added up
    first: the sum incremented once, each bucket hit once by its count.

    observe() takes a lock and writes the multiprocess file twice per value, ~2 µs a stored
    check at ingest. This relies on prometheus-client's Histogram keeping `_sum`, `_buckets`
    and `_upper_bounds` (as observe() uses them): tests/healthmon/test_metrics_bulk.py holds
    it equal to observe() one value at a time.
    """
    if not values:
        return
    child._raise_if_not_observable()
    bounds = child._upper_bounds
    hits: dict[int, int] = {}
    for value in values:
        # observe() counts a value in the first bucket whose bound is >= it (+Inf last).
        at = bisect_left(bounds, value)
        hits[at] = hits.get(at, 0) + 1
    child._sum.inc(math.fsum(values))
    for at, count in hits.items():
        child._buckets[at].inc(count)


def dispatch_observed(*, claimed: int, lag_seconds: float) -> None:
    """Record one dispatcher tick: how many endpoints it claimed and how late it was."""
    DISPATCH_CLAIMED.observe(claimed)
    DISPATCH_LAG.set(max(lag_seconds, 0.0))


def delivery_observed(*, outcome: str) -> None:
    """Count one delivery attempt by what became of it."""
    DELIVERIES.labels(outcome=outcome).inc()


def route_of(request: HttpRequest) -> str:
    """The route template that served the request (`api/v1/endpoints/<pk>`), never its URL."""
    match = getattr(request, "resolver_match", None)
    if match is None:  # answered before the URL was resolved (an HTTPS redirect) or a 404
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return UNMATCHED
    if not match.route:
        return UNMATCHED
    # DRF's router writes regexes: show `(?P<pk>[^/.]+)` as `<pk>`, drop the anchors.
    route = str(match.route).replace("^", "").replace("$", "")
    route = _GROUP.sub(lambda group: f"<{group.group(1)}>", route)
    return route.replace("\\.", ".")


class MetricsMiddleware:
    """Count every answered request by route template and status, and time it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer the request, then record it."""
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_of(request)
        method = request.method if request.method in METHODS else "other"
        HTTP_REQUESTS.labels(method=method, route=route, status=response.status_code).inc()
        HTTP_DURATION.labels(route=route).observe(time.perf_counter() - started)
        return response


class QueueDepthCollector(Collector):
    """Read how many tasks wait in each broker queue at scrape time."""

    def __init__(self, depths: Callable[[], dict[str, int]]) -> None:
        self.depths = depths

    def collect(self) -> Iterable[Any]:
        """One gauge sample per queue; none when the broker cannot be read."""
        family = GaugeMetricFamily(
            "healthmon_queue_depth", "Tasks waiting in a broker queue.", labels=["queue"]
        )
        for queue, depth in self.depths().items():
            family.add_metric([queue], depth)
        yield family


def exposition(depths: Callable[[], dict[str, int]]) -> bytes:
    """Every process's samples, summed, and the queue depths, in the text format."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(settings.PROMETHEUS_MULTIPROC_DIR))
    registry.register(QueueDepthCollector(depths))
    return generate_latest(registry)
