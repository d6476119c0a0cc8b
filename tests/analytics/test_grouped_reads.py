"""The grouped rollup reads: a page of endpoints (an organization's summary) answers what each
endpoint answers alone, the uptime route what the SLA route answers, and every route a
fixed number of queries however many endpoints it covers."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analytics import reports, selectors
from analytics.reports import Items
from analytics.selectors import rollups
from healthmon.intervals import Window
from monitoring.models import Endpoint
from monitoring.services import endpoint_set_enabled
from tests.analytics.conftest import figures

URL = "/api/v1/analytics/"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# Nine days after T0, mid-hour and mid-5-minutes: every window's edges fall in all three
# tiers (5-minute, hourly and daily rows).
NOW = T0 + 9 * DAY + 13 * HOUR + 37 * MINUTE


@pytest.fixture
def fleet(cast, make_endpoint, record):
    """Endpoints (up to `total`) with nine days of checks (every 10 minutes unless told),
    each its own latency, failures and incidents; the second one paused for a day (its
    paused time counts in no uptime)."""

    made: list[Endpoint] = []

    def grow(total, every=10 * MINUTE):
        while len(made) < total:
            n = len(made)
            with time_machine.travel(T0, tick=False):
                endpoint = make_endpoint(cast.project, name=f"service {n}", failure_threshold=2)
            # n failed checks in a row on day n % 9 at 06:00 (from two on: an incident),
            # and a lone failure every 37th check.
            down = {(n % 9) * 144 + 36 + k for k in range(n)}
            checks = []
            for i in range(int((NOW - T0) / every)):
                ok = i not in down and i % 37 != 5
                checks.append((T0 + i * every, ok, 20.0 + n * 7 + (i * 13 % 50)))
            if n == 1:
                with time_machine.travel(T0 + 3 * DAY, tick=False):
                    endpoint_set_enabled(endpoint=endpoint, enabled=False)
                with time_machine.travel(T0 + 4 * DAY, tick=False):
                    endpoint_set_enabled(endpoint=endpoint, enabled=True)
                checks = [c for c in checks if not T0 + 3 * DAY <= c[0] < T0 + 4 * DAY]
            record(endpoint, checks)
            made.append(endpoint)
        return list(made)

    return grow


def test_a_page_of_endpoints_answers_what_each_answers_alone(cast, fleet):
    endpoints = fleet(6)
    endpoints = list(Endpoint.objects.filter(pk__in=[e.pk for e in endpoints]).order_by("name"))
    for period in (timedelta(hours=30), 7 * DAY, 30 * DAY):
        window = Window(NOW - period, NOW)

        together = reports.summary(Items("endpoint", endpoints), window, NOW)
        alone = [reports.summary(Items("endpoint", [e]), window, NOW)[0] for e in endpoints]

        assert together == alone
    # Not vacuous: checks, failures, percentiles and incidents in every period.
    assert all(row["checks_24h"] and row["p95_ms"] for row in together)
    assert {row["uptime_30d"] for row in together} - {100.0}
    assert len({row["failures"] for row in together}) > 3


def test_a_windows_figures_equal_its_own_read(cast, fleet):
    endpoints = fleet(3)
    owners = {endpoint.pk: endpoint.pk for endpoint in endpoints}
    windows = [Window(NOW - period, NOW) for period in (DAY, 7 * DAY, 30 * DAY)]
    windows.append(Window(T0 + 2 * DAY + 7 * MINUTE, T0 + 5 * DAY + 3 * HOUR))

    together = selectors.rollup_figures(owners, windows, NOW, percentiles=1)

    for index, window in enumerate(windows):
        alone = selectors.latency(owners, window, NOW, histograms=index == 1)
        assert together[index] == alone
    assert together[1][endpoints[0].pk].percentile(0.95) is not None


@pytest.mark.parametrize("grouped", [False, True], ids=["per-endpoint", "per-project"])
def test_a_rates_only_read_counts_what_the_full_read_counts(cast, fleet, grouped):
    endpoints = fleet(4)
    owners = {e.pk: e.project_id if grouped else e.pk for e in endpoints}
    windows = [Window(NOW - period, NOW) for period in (DAY, 7 * DAY, 30 * DAY)]
    windows.append(Window(T0 + 2 * DAY + 7 * MINUTE, T0 + 5 * DAY + 3 * HOUR))

    full = selectors.rollup_figures(owners, windows, NOW)
    with CaptureQueriesContext(connection) as queries:
        rates = selectors.rollup_figures(owners, windows, NOW, rates_only=True)

    def counted(found):
        return {key: (stats.count, stats.failures) for key, stats in found.items()}

    assert [counted(found) for found in rates] == [counted(found) for found in full]
    assert all(sum(f for _, f in counted(found).values()) for found in rates)  # not vacuous
    for found in rates:  # no response-time figure, rather than a wrong one
        assert all(stats.timed == 0 and stats.max_ms is None for stats in found.values())
    (statement,) = [query["sql"] for query in queries.captured_queries]
    assert "sum_ms" not in statement
    assert "max_ms" not in statement
    with pytest.raises(ValueError, match="percentiles"):
        selectors.rollup_figures(owners, windows, NOW, percentiles=0, rates_only=True)


def test_the_uptime_route_reads_checks_and_failures_only(api, cast, fleet):
    fleet(2)
    with time_machine.travel(NOW, tick=False):
        api.as_user(cast.owner)
        with CaptureQueriesContext(connection) as queries:
            response = api.get(URL + "uptime", {"group_by": "project"})
    assert response.status_code == 200, response.content
    rollup_reads = [q["sql"] for q in queries.captured_queries if "analytics_rollup" in q["sql"]]
    assert len(rollup_reads) == 1
    assert "failures" in rollup_reads[0]
    assert "sum_ms" not in rollup_reads[0]


def test_the_organization_summary_route_equals_each_endpoints_own(api, cast, fleet):
    fleet(5)
    with time_machine.travel(NOW, tick=False):
        api.as_user(cast.owner)
    with time_machine.travel(NOW, tick=False):
        rows = figures(api.get(URL + "summary", {"period": "30d", "page_size": 500}))
        alone = [
            figures(api.get(URL + "summary", {"period": "30d", "endpoint": row["endpoint"]}))[0]
            for row in rows
        ]

    assert len(rows) == 5
    assert rows == alone


@pytest.mark.parametrize("group_by", ["endpoint", "project"])
def test_the_uptime_route_equals_the_sla_route(api, cast, fleet, group_by):
    fleet(4)
    with time_machine.travel(NOW, tick=False):
        api.as_user(cast.owner)
    with time_machine.travel(NOW, tick=False):
        uptimes = figures(api.get(URL + "uptime", {"group_by": group_by}))
        slas = {
            period: figures(api.get(URL + "sla", {"period": period, "group_by": group_by}))
            for period in ("24h", "7d", "30d")
        }

    assert uptimes
    for period, rows in slas.items():
        assert [row["uptime"] for row in rows] == [row[f"uptime_{period}"] for row in uptimes]
        assert [row["checks"] for row in rows] == [row[f"checks_{period}"] for row in uptimes]
    assert {row["uptime_30d"] for row in uptimes} - {100.0, None}


# The caller's state, the projects it sees and the page (for projects, also the page's
# endpoints; no count: a page that is not full is counted without one), then the report:
# one rollup statement for every window and tier, status changes, incidents, maintenance
# windows (on PostgreSQL, one statement reads the three of them and says whether there are
# maintenance windows to read).
BUDGET = {"endpoint": 7, "project": 8}
BUDGET_POSTGRESQL = {"endpoint": 5, "project": 6}
ROUTES = ("summary", "uptime", "sla")


def count_queries(api, route, params):
    with time_machine.travel(NOW, tick=False), CaptureQueriesContext(connection) as queries:
        response = api.get(URL + route, params)
    assert response.status_code == 200, response.content
    return [query["sql"][:60] for query in queries.captured_queries]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "params",
    [
        {"period": "24h"},
        {"period": "30d", "page_size": 500},  # an organization's summary
        {"period": "30d", "group_by": "project"},
    ],
)
def test_a_route_costs_a_fixed_number_of_queries(api, cast, fleet, route, params):
    with time_machine.travel(NOW, tick=False):
        api.as_user(cast.owner)
    fleet(1, every=HOUR)
    one = count_queries(api, route, params)
    fleet(8, every=HOUR)
    eight = count_queries(api, route, params)

    budgets = BUDGET_POSTGRESQL if connection.vendor == "postgresql" else BUDGET
    budget = budgets[params.get("group_by", "endpoint")]
    assert (len(one), len(eight)) == (budget, budget), eight


# --- How the statements are read ------------------------------------------------------------


def test_a_tier_s_parts_that_follow_each_other_are_read_by_one_scan():
    """A month's daily parts (the 30-day window's alone, then the 7-day window's, then
    today's) follow each other: one scan of the daily rows, each window summing its own
    (and one of the five-minute rows not folded into them yet, `analytics.fold`)."""
    windows = [Window(NOW - period, NOW) for period in (DAY, 7 * DAY, 30 * DAY)]
    parts = rollups._parts(windows, NOW)
    daily = [part for part in parts if part.tier.width == DAY]
    assert len(daily) >= 2, parts  # the case this test is about

    sql, _ = rollups._figures_sql([Endpoint().pk], parts, len(windows), None, connection)

    scans = rollups._scans(parts)
    coarse = [scan for scan in scans if parts[scan[0]].tier.width > timedelta(minutes=5)]
    assert len(scans) < len(parts)
    assert sql.count(" FROM analytics_rollup_") == len(scans) + len(coarse)
    assert sql.count(" FROM analytics_rollup_1d ") == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared on PostgreSQL only")
def test_the_reports_statements_are_prepared_once_per_connection(api, cast, fleet):
    """The rollup statement and the status history statement are prepared by the server
    on their first run, and run again as prepared statements: neither parsed nor planned
    again (the endpoint summary's goal, bench/README.md)."""
    fleet(2, every=HOUR)
    with time_machine.travel(NOW, tick=False):
        api.as_user(cast.owner)
        for _ in range(2):
            response = api.get(URL + "summary", {"period": "24h"})
            assert response.status_code == 200, response.content
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    # Not the pipeline's own prepared rollup upserts (`record` wrote the checks): the reads.
    figures = [s for s in prepared if s.startswith("WITH endpoints") and "SUM(count)" in s]
    history = [s for s in prepared if "AS kind" in s and "monitoring_statuschange" in s]
    assert figures, prepared
    assert history, prepared
