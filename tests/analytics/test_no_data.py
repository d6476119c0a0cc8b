"""No data is no perfect score: a figure over a span without a check is null, beside the
count that says so (issue 20), and watching starts with the first check."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Project
from analytics.selectors import check_counts, latency
from healthmon.intervals import Window
from monitoring.models import Endpoint
from monitoring.services import EndpointChanges, endpoint_update
from tests.analytics.conftest import figures

URL = "/api/v1/analytics/"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
NOW = T0 + 30 * MINUTE
UPTIMES = ("uptime_24h", "uptime_7d", "uptime_30d")
COUNTS = ("checks_24h", "checks_7d", "checks_30d")
TIER_SPAN_FIGURES = ("uptime", "allowed_downtime_s", "downtime_s", "budget_remaining_s")


@pytest.fixture
def pending(cast, make_endpoint):
    """Created at T0 and never checked."""
    with time_machine.travel(T0, tick=False):
        return make_endpoint(cast.project, name="Pending")


@pytest.fixture
def checked_once(cast, make_endpoint, record):
    """Created at T0, one successful check a minute later."""
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, name="Once")
    record(endpoint, [(T0 + MINUTE, True, 42.0)])
    return endpoint


@pytest.fixture
def reader(api, cast):
    """The owner reading the API at NOW."""
    with time_machine.travel(NOW, tick=False):
        yield api.as_user(cast.owner)


def one(reader, route, endpoint, **params):
    [row] = figures(reader.get(URL + route, {"endpoint": str(endpoint.pk), **params}))
    return row


def compared(reader, *endpoints, **params):
    ids = ",".join(str(endpoint.pk) for endpoint in endpoints)
    response = reader.get(URL + "compare", {"endpoints": ids, **params})
    assert response.status_code == 200, response.content
    return response.json()["results"]


# --- A pending endpoint: null with the count 0 -------------------------------------------------


def test_summary_of_a_pending_endpoint_is_null_with_no_checks(reader, pending):
    row = one(reader, "summary", pending)

    assert row["status"] == "pending"
    assert row["checks"] == 0
    assert [row[name] for name in UPTIMES] == [None] * 3
    assert [row[name] for name in COUNTS] == [0] * 3
    assert row["success_rate"] is None
    assert row["avg_ms"] is None


def test_uptime_of_a_pending_endpoint_is_null_with_no_checks(reader, pending):
    row = one(reader, "uptime", pending)

    assert [row[name] for name in UPTIMES] == [None] * 3
    assert [row[name] for name in COUNTS] == [0] * 3
    assert row["success_rate_24h"] is None


def test_sla_of_a_pending_endpoint_has_no_uptime_and_no_standing(reader, pending):
    row = one(reader, "sla", pending)

    assert (row["checks"], row["uptime"], row["watched_s"]) == (0, None, 0)
    assert [tier["compliant"] for tier in row["tiers"]] == [None] * 3
    for tier in row["tiers"]:
        assert [tier[name] for name in TIER_SPAN_FIGURES] == [None] * 4, tier["tier"]
        # What a tier allows per month and year is the tier's, data or not.
        assert tier["allowed_downtime_month_s"] > 0
        assert tier["allowed_downtime_year_s"] > 0


def test_compare_of_a_pending_endpoint_is_null_with_no_checks(reader, pending, checked_once):
    new, old = compared(reader, pending, checked_once)

    assert (new["checks"], new["checks_24h"]) == (0, 0)
    assert [new[name] for name in UPTIMES] == [None] * 3
    assert (new["sla"]["uptime"], new["sla"]["compliant"]) == (None, None)
    assert (old["checks"], old["uptime_24h"], old["sla"]["compliant"]) == (1, 100.0, True)


def test_availability_of_a_pending_endpoint_is_null_in_every_bucket(reader, pending):
    row = one(reader, "availability", pending, bucket="5m")

    assert (row["checks"], row["uptime"]) == (0, None)
    assert row["buckets"]
    assert {bucket["uptime"] for bucket in row["buckets"]} == {None}


def test_response_time_of_a_pending_endpoint_has_empty_points(reader, pending):
    row = one(reader, "response-time", pending, bucket="5m")

    assert {point["count"] for point in row["points"]} == {0}
    assert {point["avg_ms"] for point in row["points"]} == {None}
    assert {point["p95_ms"] for point in row["points"]} == {None}


def test_sla_as_csv_leaves_cells_without_data_empty_beside_the_count(reader, pending):
    response = reader.get(URL + "sla", {"endpoint": str(pending.pk), "format": "csv"})

    assert response.status_code == 200
    header, *rows = csv.reader(io.StringIO(response.content.decode()))
    records = [dict(zip(header, row, strict=True)) for row in rows]
    assert [(r["checks"], r["uptime"], r["compliant"]) for r in records] == [("0", "", "")] * 3
    assert all(float(r["allowed_downtime_month_s"]) > 0 for r in records)


# --- One check: numbers ------------------------------------------------------------------------


def test_one_check_makes_the_summary_and_uptime_a_number(reader, checked_once):
    summary = one(reader, "summary", checked_once)
    uptime = one(reader, "uptime", checked_once)

    assert (summary["checks"], summary["uptime_24h"], summary["checks_24h"]) == (1, 100.0, 1)
    assert [uptime[name] for name in UPTIMES] == [100.0] * 3
    assert [uptime[name] for name in COUNTS] == [1] * 3


def test_one_check_gives_sla_budgets_of_the_time_watched_since(reader, checked_once):
    row = one(reader, "sla", checked_once)

    watched = (NOW - (T0 + MINUTE)).total_seconds()  # 29 minutes: from the first check
    assert (row["checks"], row["uptime"], row["watched_s"]) == (1, 100.0, watched)
    tiers = {tier["target"]: tier for tier in row["tiers"]}
    assert [tier["compliant"] for tier in tiers.values()] == [True] * 3
    assert tiers[99.9]["allowed_downtime_s"] == pytest.approx(1.74)  # a float, not 0
    assert tiers[99.99]["budget_remaining_s"] == pytest.approx(0.174)
    assert tiers[99.9]["downtime_s"] == 0


def test_availability_buckets_before_the_first_check_stay_null(reader, checked_once):
    row = one(reader, "availability", checked_once, bucket="5m")

    shown = {bucket["t"]: bucket["uptime"] for bucket in row["buckets"]}
    assert (row["checks"], row["uptime"]) == (1, 100.0)
    assert shown["2026-11-01T00:00:00Z"] == 100.0  # watched from 00:01
    assert shown["2026-11-01T00:25:00Z"] == 100.0
    assert shown["2026-10-31T23:55:00Z"] is None  # before creation


# --- A window with no check --------------------------------------------------------------------


@pytest.fixture
def went_quiet(cast, make_endpoint, record):
    """Checked every 10 minutes on the day after T0, then never again (still enabled)."""
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, name="Quiet")
    record(endpoint, [(T0 + k * 10 * MINUTE, True, 30.0) for k in range(144)])
    return endpoint


def test_a_day_without_a_check_has_no_uptime_but_the_week_does(api, cast, went_quiet):
    with time_machine.travel(T0 + 3 * DAY, tick=False):
        api.as_user(cast.owner)
        summary = one(api, "summary", went_quiet)
        day = one(api, "sla", went_quiet)
        week = one(api, "sla", went_quiet, period="7d")

    assert (summary["checks"], summary["uptime_24h"], summary["checks_24h"]) == (0, None, 0)
    assert (summary["uptime_7d"], summary["checks_7d"]) == (100.0, 144)
    assert (day["checks"], day["uptime"]) == (0, None)
    assert {tier["compliant"] for tier in day["tiers"]} == {None}
    assert (week["checks"], week["uptime"]) == (144, 100.0)
    assert {tier["compliant"] for tier in week["tiers"]} == {True}


def test_a_range_before_the_first_check_has_no_data(api, cast, make_endpoint, record):
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, name="Late")
    record(endpoint, [(T0 + 2 * HOUR, True, 30.0), (T0 + 2 * HOUR + 10 * MINUTE, True, 30.0)])
    before = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T01:00:00Z"}

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        api.as_user(cast.owner)
        sla = one(api, "sla", endpoint, **before)
        availability = one(api, "availability", endpoint, **before)

    assert (sla["checks"], sla["uptime"], sla["watched_s"]) == (0, None, 0)
    assert (availability["checks"], availability["uptime"]) == (0, None)


# --- Watching starts with the first check ------------------------------------------------------


def test_the_wait_for_a_check_after_a_new_target_is_not_watched(api, cast, checked_once, record):
    # Watched from the first check (00:01) to the new target (00:30), and again from the
    # next check (00:40) on: 29 + 20 minutes of the hour.
    with time_machine.travel(T0 + 30 * MINUTE, tick=False):
        endpoint_update(
            endpoint=Endpoint.objects.get(pk=checked_once.pk),
            changes=EndpointChanges(target="https://example.com/other"),
        )
    record(checked_once, [(T0 + 40 * MINUTE, True, 40.0)])

    with time_machine.travel(T0 + HOUR, tick=False):
        api.as_user(cast.owner)
        row = one(api, "sla", checked_once)

    assert row["watched_s"] == (29 + 20) * 60
    assert (row["checks"], row["uptime"]) == (2, 100.0)


# --- Projects ----------------------------------------------------------------------------------


def test_a_project_is_measured_by_the_endpoints_that_were_checked(
    reader, cast, pending, checked_once, make_endpoint
):
    quiet = Project.objects.create(organization=cast.org, name="Quiet")
    with time_machine.travel(T0, tick=False):
        make_endpoint(quiet, name="Also pending")

    rows = {
        row["name"]: row for row in figures(reader.get(URL + "summary", {"group_by": "project"}))
    }
    slas = {row["name"]: row for row in figures(reader.get(URL + "sla", {"group_by": "project"}))}

    assert (rows["Default"]["uptime_24h"], rows["Default"]["checks_24h"]) == (100.0, 1)
    assert (rows["Quiet"]["uptime_24h"], rows["Quiet"]["checks_24h"]) == (None, 0)
    assert slas["Default"]["watched_s"] == 29 * 60  # the pending endpoint adds nothing
    assert {tier["compliant"] for tier in slas["Quiet"]["tiers"]} == {None}


# --- The schema says so ------------------------------------------------------------------------


def test_the_schema_marks_figures_without_data_nullable(api):
    document = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]

    def nullable(schema, name):
        return schemas[schema]["properties"][name].get("nullable", False)

    assert all(nullable("Summary", name) for name in UPTIMES)
    assert not any(nullable("Summary", name) for name in COUNTS)
    assert nullable("Sla", "uptime")
    assert not nullable("Sla", "checks")
    assert all(nullable("Tier", name) for name in (*TIER_SPAN_FIGURES, "compliant"))
    assert not nullable("Tier", "allowed_downtime_month_s")
    assert nullable("Availability", "uptime")
    assert "null with no data" in schemas["Tier"]["properties"]["compliant"]["description"].lower()


def test_check_counts_equal_the_counts_latency_reads(went_quiet, pending):
    now = T0 + 3 * DAY
    windows = [
        Window(now - DAY, now),
        Window(now - 7 * DAY, now),
        Window(now - 30 * DAY, now),
        Window(T0 + 5 * HOUR + 7 * MINUTE, T0 + 9 * HOUR + 53 * MINUTE),  # edges off the grid
    ]
    owners = {went_quiet.pk: went_quiet.pk, pending.pk: pending.pk}

    counted = check_counts(owners, windows, now)

    assert counted[went_quiet.pk] == [latency(owners, w, now)[went_quiet.pk].count for w in windows]
    assert counted[went_quiet.pk][:3] == [0, 144, 144]
    assert counted[pending.pk] == [0] * 4


def test_downtime_counts_from_the_first_failure_of_a_new_endpoint(cast, make_endpoint, record, api):
    """Confirmed at the third failure, the outage (and the watching) began at the first."""
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, name="Broken", failure_threshold=3)
    record(endpoint, [(T0 + n * MINUTE, False, 5.0) for n in range(1, 4)])
    record(endpoint, [(T0 + 10 * MINUTE, True, 5.0)])

    with time_machine.travel(NOW, tick=False):
        row = one(api.as_user(cast.owner), "sla", endpoint, period="24h")

    assert row["downtime_s"] == 9 * 60  # the incident: first failure to recovery
    assert row["watched_s"] == 29 * 60  # from the first check to NOW
