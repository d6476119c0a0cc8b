"""Analytics reads: response time, success and error rates, time-weighted uptime, SLA.

Latency and rates come from rollups (`rollups`: a range is tiled by the coarsest rows that
fit it; `bucketed`: series per bucket of one tier); uptime comes from incidents (`uptime`:
downtime is incident time inside the window, over the time the endpoint was watched in it).
A figure over a span with no check is None, never a perfect score.
"""

from analytics.selectors.bucketed import bucket_for, series, series_points
from analytics.selectors.rollups import check_counts, latency, rollup_figures, window_counts
from analytics.selectors.uptime import (
    UNWATCHED,
    Coverage,
    coverage,
    coverage_seconds,
    coverage_seconds_in,
    degraded_stretches,
    sla_tiers,
    uptime_percent,
)

__all__ = [
    "UNWATCHED",
    "Coverage",
    "bucket_for",
    "check_counts",
    "coverage",
    "coverage_seconds",
    "coverage_seconds_in",
    "degraded_stretches",
    "latency",
    "rollup_figures",
    "series",
    "series_points",
    "sla_tiers",
    "uptime_percent",
    "window_counts",
]
