"""What the analytics reports answer on constructed data: series, groups, availability,
errors against the previous period, uptime around pauses, comparison and SLA targets."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Project
from monitoring.models import Incident
from tests.analytics.conftest import figures
from tests.helpers import assert_problem, iso

URL = "/api/v1/analytics/"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def span(start: datetime, end: datetime, **params):
    return {"from": iso(start), "to": iso(end), **params}


@pytest.fixture
def created(make_endpoint):
    """An endpoint created at a chosen moment (checks before it would be stale)."""

    def make(project, at=T0, **fields):
        with time_machine.travel(at, tick=False):
            return make_endpoint(project, **fields)

    return make


def login(api, user):
    """Send a JWT issued at T0: one issued at the real now would be from the future."""
    with time_machine.travel(T0, tick=False):
        api.as_user(user)


def minutes(start, count, fail=(), ms=100.0, errors=None):
    """A check a minute from `start`; the minutes in `fail` fail (with errors[minute])."""
    errors = errors or {}
    return [
        (start + i * MINUTE, i not in fail, ms, errors.get(i, "HTTP 503") if i in fail else "")
        for i in range(count)
    ]


# --- Response time ----------------------------------------------------------------------------


def test_the_series_has_one_point_per_bucket_with_empty_ones(api, cast, created, record):
    endpoint = created(cast.project)
    record(
        endpoint,
        [
            (T0 + 5 * MINUTE, True, 100.0),
            (T0 + 20 * MINUTE, True, 350.0),
            (T0 + 40 * MINUTE, True, 150.0),
            (T0 + 50 * MINUTE, False, 2.0),  # a refused connection has no response time
            (T0 + 2 * HOUR + MINUTE, True, 50.0),
            (T0 + 2 * HOUR + 30 * MINUTE, True, 70.0),
        ],
    )
    login(api, cast.owner)

    with time_machine.travel(T0 + 4 * HOUR, tick=False):
        response = api.get(URL + "response-time", span(T0, T0 + 3 * HOUR, bucket="1h"))

    [row] = figures(response)
    body = response.json()
    assert (body["from"], body["to"], body["bucket"]) == (iso(T0), iso(T0 + 3 * HOUR), "1h")
    assert row["endpoint"] == str(endpoint.id)
    first, empty, third = row["points"]
    assert [first["t"], empty["t"], third["t"]] == [iso(T0 + n * HOUR) for n in range(3)]
    assert (first["count"], first["failures"]) == (4, 1)
    assert (first["min_ms"], first["max_ms"], first["avg_ms"]) == (100.0, 350.0, 200.0)
    assert empty["count"] == 0
    assert [empty[name] for name in ("avg_ms", "min_ms", "max_ms", "p95_ms")] == [None] * 4
    assert (third["count"], third["min_ms"], third["max_ms"], third["avg_ms"]) == (2, 50, 70, 60)
    assert 50 <= third["p95_ms"] <= 70


@pytest.mark.parametrize(("bucket", "points"), [("5m", 288), ("1h", 24), ("1d", 1)])
def test_every_bucket_of_the_window_is_a_point(api, cast, created, record, bucket, points):
    endpoint = created(cast.project)
    record(endpoint, [(T0 + 7 * HOUR, True, 80.0)])
    login(api, cast.owner)

    with time_machine.travel(T0 + 2 * DAY, tick=False):
        response = api.get(URL + "response-time", span(T0, T0 + DAY, bucket=bucket))

    [row] = figures(response)
    assert len(row["points"]) == points
    width = {"5m": 5 * MINUTE, "1h": HOUR, "1d": DAY}[bucket]
    assert [p["t"] for p in row["points"]] == [iso(T0 + n * width) for n in range(points)]
    assert sum(p["count"] for p in row["points"]) == 1
    assert [p["avg_ms"] for p in row["points"] if p["count"]] == [80.0]


@pytest.mark.parametrize(
    ("days", "bucket", "points"),
    [(1, "5m", 288), (2, "5m", 576), (7, "1h", 168), (30, "1h", 720), (60, "1d", 60)],
)
def test_without_a_bucket_the_finest_under_800_points_is_used(
    api, cast, created, days, bucket, points
):
    created(cast.project)

    with time_machine.travel(T0 + 61 * DAY, tick=False):
        response = api.as_user(cast.owner).get(URL + "response-time", span(T0, T0 + days * DAY))

    [row] = figures(response)
    assert response.json()["bucket"] == bucket
    assert len(row["points"]) == points


def test_a_range_ending_now_has_every_bucket_it_overlaps(api, cast, created, record):
    endpoint = created(cast.project)
    record(endpoint, [(T0 + 10 * MINUTE, True, 90.0), (T0 + DAY + MINUTE, True, 30.0)])
    login(api, cast.owner)
    now = T0 + DAY + 150 * timedelta(seconds=1)

    with time_machine.travel(now, tick=False):
        response = api.get(URL + "response-time", {"bucket": "1h"})

    [row] = figures(response)
    assert response.json()["from"] == iso(now - DAY)
    assert [p["t"] for p in row["points"]] == [iso(T0 + n * HOUR) for n in range(25)]
    assert [p["avg_ms"] for p in row["points"] if p["count"]] == [90.0, 30.0]


def test_group_by_project_aggregates_its_endpoints(api, cast, created, record):
    other = Project.objects.create(organization=cast.org, name="Payments")
    web, api_ep = created(cast.project, name="Web"), created(cast.project, name="API")
    pay = created(other, name="Pay")
    record(web, [(T0 + MINUTE, True, 100.0), (T0 + 2 * MINUTE, True, 200.0)])
    record(api_ep, [(T0 + MINUTE, True, 400.0), (T0 + HOUR + MINUTE, True, 50.0)])
    record(api_ep, [(T0 + 3 * MINUTE, False, 1.0)])
    record(pay, [(T0 + MINUTE, True, 1000.0)])
    login(api, cast.owner)

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        response = api.get(
            URL + "response-time", span(T0, T0 + 2 * HOUR, bucket="1h", group_by="project")
        )

    rows = {row["project"]: row for row in figures(response)}
    assert set(rows) == {str(cast.project.id), str(other.id)}
    assert "endpoint" not in rows[str(other.id)]
    assert rows[str(other.id)]["name"] == "Payments"
    first, second = rows[str(cast.project.id)]["points"]
    assert (first["count"], first["failures"]) == (4, 1)
    assert (first["min_ms"], first["max_ms"]) == (100.0, 400.0)
    assert first["avg_ms"] == pytest.approx(700 / 3, abs=0.001)
    assert (second["count"], second["min_ms"], second["max_ms"]) == (1, 50.0, 50.0)
    [paid, nothing] = rows[str(other.id)]["points"]
    assert (paid["count"], paid["avg_ms"], nothing["count"]) == (1, 1000.0, 0)


def test_summary_by_project_adds_up_its_endpoints(api, cast, created, record):
    web, shop = created(cast.project, name="Web"), created(cast.project, name="Shop")
    record(web, minutes(T0, 60, fail={10}))
    record(shop, minutes(T0, 60, fail={20, 30, 40}))
    login(api, cast.owner)

    with time_machine.travel(T0 + HOUR, tick=False):
        [row] = figures(api.get(URL + "summary", span(T0, T0 + HOUR, group_by="project")))

    assert row["project"] == str(cast.project.id)
    assert (row["checks"], row["failures"]) == (120, 4)
    assert row["error_rate"] == round(100 * 4 / 120, 4)


# --- Availability -----------------------------------------------------------------------------


def test_availability_puts_an_incident_in_its_buckets(api, cast, created, record):
    endpoint = created(cast.project)
    # Minutes 45..74 fail: an incident from 00:45 to 01:15, across the hour boundary; and
    # minutes 150..159, an incident after the range asked for.
    record(endpoint, minutes(T0, 180, fail={*range(45, 75), *range(150, 160)}))
    login(api, cast.owner)

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        response = api.get(URL + "availability", span(T0, T0 + 2 * HOUR, bucket="1h"))

    [row] = figures(response)
    assert [(b["t"], b["downtime_s"], b["uptime"]) for b in row["buckets"]] == [
        (iso(T0), 900, 75.0),
        (iso(T0 + HOUR), 900, 75.0),
    ]
    assert row["downtime_s"] == 1800
    assert row["uptime"] == 75.0
    [incident] = row["incidents"]
    assert incident["started_at"] == iso(T0 + 45 * MINUTE)
    assert incident["resolved_at"] == iso(T0 + 75 * MINUTE)
    assert incident["duration_seconds"] == 1800
    assert incident["cause"] == "HTTP 503"
    assert incident["endpoint"] == str(endpoint.id)
    assert incident["id"] == str(Incident.objects.order_by("started_at").first().id)


def test_availability_of_a_bucket_without_an_incident_is_100(api, cast, created, record):
    endpoint = created(cast.project)
    record(endpoint, minutes(T0, 180, fail={*range(70, 80)}))
    login(api, cast.owner)

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        [row] = figures(api.get(URL + "availability", span(T0, T0 + 3 * HOUR, bucket="1h")))

    assert [b["uptime"] for b in row["buckets"]] == [100.0, round(100 * 50 / 60, 4), 100.0]
    assert [b["downtime_s"] for b in row["buckets"]] == [0, 600, 0]


def test_an_open_incident_is_listed_and_down_until_now(api, cast, created, record):
    endpoint = created(cast.project)
    record(endpoint, minutes(T0, 100, fail=set(range(90, 100))))  # down since 01:30
    login(api, cast.owner)

    with time_machine.travel(T0 + 2 * HOUR, tick=False):
        [row] = figures(api.get(URL + "availability", span(T0, T0 + 3 * HOUR, bucket="1h")))

    assert [b["downtime_s"] for b in row["buckets"]] == [0, 1800, 0]
    assert [b["uptime"] for b in row["buckets"]] == [100.0, 50.0, None]
    [incident] = row["incidents"]
    assert incident["started_at"] == iso(T0 + 90 * MINUTE)
    assert incident["resolved_at"] is None
    assert incident["duration_seconds"] is None


# --- Errors -----------------------------------------------------------------------------------

CURRENT_ERRORS = {
    **dict.fromkeys(range(1, 9), "HTTP 503"),
    **dict.fromkeys(range(10, 15), "timeout"),
    **dict.fromkeys((20, 22), "connection refused"),
}


def test_errors_against_the_previous_period(api, cast, created, record):
    endpoint = created(cast.project)
    # Hour 0 (the previous period): 6 failures in 60, all one error that must not appear
    # in this period's causes. Hour 1: 15 failures in 60.
    before = {5, 15, 25, 35, 45, 55}
    record(endpoint, minutes(T0, 60, fail=before, errors=dict.fromkeys(before, "TLS expired")))
    record(endpoint, minutes(T0 + HOUR, 60, fail=set(CURRENT_ERRORS), errors=CURRENT_ERRORS))
    login(api, cast.owner)

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        response = api.get(URL + "errors", span(T0 + HOUR, T0 + 2 * HOUR, bucket="5m"))

    [row] = figures(response)
    assert (row["checks"], row["failures"]) == (60, 15)
    assert row["error_rate"] == 25.0
    assert row["previous_error_rate"] == 10.0
    assert row["error_rate_change"] == 15.0
    assert row["top_errors"] == [
        {"error": "HTTP 503", "count": 8},
        {"error": "timeout", "count": 5},
        {"error": "connection refused", "count": 2},
    ]
    assert len(row["trend"]) == 12
    assert row["trend"][0] == {"t": iso(T0 + HOUR), "checks": 5, "failures": 4, "error_rate": 80.0}
    assert sum(p["failures"] for p in row["trend"]) == 15


def test_errors_without_a_previous_period_have_no_trend_figure(api, cast, created, record):
    endpoint = created(cast.project, at=T0 + HOUR)
    record(endpoint, minutes(T0 + HOUR, 60, fail={3}))
    login(api, cast.owner)

    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        [row] = figures(api.get(URL + "errors", span(T0 + HOUR, T0 + 2 * HOUR)))

    assert row["error_rate"] == round(100 / 60, 4)
    assert row["previous_error_rate"] is None
    assert row["error_rate_change"] is None


# --- Uptime -----------------------------------------------------------------------------------


def test_uptime_leaves_out_paused_time_and_time_before_creation(api, cast, created, record):
    # Created at 04:00, checked each minute, down 42 minutes from 05:00, paused from 10:00
    # to 16:00 through the API: watched 14 hours of the day, 2,520 s of them down.
    endpoint = created(cast.project, at=T0 + 4 * HOUR)
    record(endpoint, minutes(T0 + 4 * HOUR, 360, fail=set(range(60, 102))))
    login(api, cast.owner)
    with time_machine.travel(T0 + 10 * HOUR, tick=False):
        assert api.post(f"/api/v1/endpoints/{endpoint.id}/pause").status_code == 200
    with time_machine.travel(T0 + 16 * HOUR, tick=False):
        assert api.post(f"/api/v1/endpoints/{endpoint.id}/resume").status_code == 200
    record(endpoint, minutes(T0 + 16 * HOUR, 480))

    with time_machine.travel(T0 + DAY, tick=False):
        [uptime] = figures(api.get(URL + "uptime", {"endpoint": str(endpoint.id)}))
        [sla] = figures(api.get(URL + "sla", {"endpoint": str(endpoint.id)}))

    assert Incident.objects.get(endpoint=endpoint).duration_seconds == 2520
    assert uptime["uptime_24h"] == uptime["uptime_7d"] == uptime["uptime_30d"] == 95.0
    assert (sla["watched_s"], sla["downtime_s"], sla["uptime"]) == (14 * 3600, 2520, 95.0)


def test_pausing_ends_the_downtime_of_an_open_incident(api, cast, created, record):
    endpoint = created(cast.project)
    record(endpoint, minutes(T0, 120, fail=set(range(90, 120))))  # down from 01:30
    login(api, cast.owner)
    with time_machine.travel(T0 + 2 * HOUR, tick=False):
        assert api.post(f"/api/v1/endpoints/{endpoint.id}/pause").status_code == 200

    with time_machine.travel(T0 + 4 * HOUR, tick=False):
        [sla] = figures(api.get(URL + "sla", span(T0, T0 + 4 * HOUR)))

    # Watched two hours (then paused), down the last half hour of them.
    assert (sla["watched_s"], sla["downtime_s"], sla["uptime"]) == (7200, 1800, 75.0)


def test_a_past_range_counts_time_watched_before_a_later_pause(api, cast, created, record):
    endpoint = created(cast.project)
    record(endpoint, minutes(T0, 300, fail=set(range(60, 90))))  # down 01:00 to 01:30
    login(api, cast.owner)
    with time_machine.travel(T0 + 10 * HOUR, tick=False):
        assert api.post(f"/api/v1/endpoints/{endpoint.id}/pause").status_code == 200

    with time_machine.travel(T0 + DAY, tick=False):
        [sla] = figures(api.get(URL + "sla", span(T0, T0 + 5 * HOUR)))
        [availability] = figures(api.get(URL + "availability", span(T0, T0 + 5 * HOUR)))
        [uptime] = figures(api.get(URL + "uptime", {"to": iso(T0 + 5 * HOUR)}))

    # Paused only at 10:00: the five hours asked for were all watched.
    assert (sla["watched_s"], sla["downtime_s"], sla["uptime"]) == (5 * 3600, 1800, 90.0)
    assert availability["uptime"] == 90.0
    assert uptime["uptime_24h"] == 90.0


def test_a_past_range_leaves_out_time_paused_before_a_later_resume(api, cast, created, record):
    endpoint = created(cast.project, enabled=False)  # created paused
    login(api, cast.owner)
    with time_machine.travel(T0 + 10 * HOUR, tick=False):
        assert api.post(f"/api/v1/endpoints/{endpoint.id}/resume").status_code == 200
    record(endpoint, minutes(T0 + 10 * HOUR, 120))

    with time_machine.travel(T0 + DAY, tick=False):
        [before] = figures(api.get(URL + "sla", span(T0, T0 + 5 * HOUR)))
        [day] = figures(api.get(URL + "sla", span(T0, T0 + DAY)))

    assert (before["watched_s"], before["uptime"]) == (0, None)
    assert (day["watched_s"], day["uptime"]) == (14 * 3600, 100.0)


def test_a_lone_failure_lowers_the_success_rate_not_the_uptime(api, cast, created, record):
    endpoint = created(cast.project, failure_threshold=2)
    # Every tenth check fails, never two in a row: no incident is ever confirmed.
    record(endpoint, minutes(T0, 1440, fail={m for m in range(1440) if m % 10 == 5}))
    login(api, cast.owner)

    with time_machine.travel(T0 + DAY, tick=False):
        [uptime] = figures(api.get(URL + "uptime"))
        [summary] = figures(api.get(URL + "summary"))

    assert not Incident.objects.filter(endpoint=endpoint).exists()
    assert uptime["uptime_24h"] == 100.0
    assert uptime["success_rate_24h"] == 90.0
    assert (summary["uptime_24h"], summary["success_rate"], summary["error_rate"]) == (
        100.0,
        90.0,
        10.0,
    )


# --- Compare and SLA targets -------------------------------------------------------------------


def test_compare_answers_in_the_order_asked_with_each_ones_sla(api, cast, created, record):
    standard = created(cast.project, name="Standard", sla_target=99.9)
    premium = created(cast.project, name="Premium", sla_target=99.99)
    high = created(cast.project, name="High", sla_target=99.95)
    record(standard, minutes(T0, 120, fail=set(range(30, 40)), ms=120.0))
    record(premium, minutes(T0, 120, ms=40.0))
    record(high, minutes(T0, 60, ms=300.0))
    login(api, cast.owner)
    order = [high, standard, premium]

    with time_machine.travel(T0 + 2 * HOUR, tick=False):
        response = api.get(
            URL + "compare",
            span(T0, T0 + 2 * HOUR, bucket="1h", endpoints=",".join(str(e.id) for e in order)),
        )

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"from", "to", "bucket", "results"}
    rows = body["results"]
    assert [row["endpoint"] for row in rows] == [str(e.id) for e in order]
    assert [(row["sla"]["target"], row["sla"]["tier"]) for row in rows] == [
        (99.95, "High"),
        (99.9, "Standard"),
        (99.99, "Premium"),
    ]
    assert [row["sla_target"] for row in rows] == [99.95, 99.9, 99.99]
    assert [row["sla"]["compliant"] for row in rows] == [True, False, True]
    assert rows[1]["sla"]["downtime_s"] == 600
    assert [[p["count"] for p in row["points"]] for row in rows] == [[60, 0], [60, 60], [60, 60]]
    assert [row["points"][0]["avg_ms"] for row in rows] == [300.0, 120.0, 40.0]
    assert [row["checks"] for row in rows] == [60, 120, 120]


def endpoint_body(project, **fields):
    return {
        "project": str(project.id),
        "name": "Checkout API",
        "type": "http",
        "target": "https://checkout.example.com/health",
        **fields,
    }


@pytest.mark.parametrize("target", [99.9, 99.95, 99.99])
def test_an_endpoint_takes_each_sla_tier(api, cast, target):
    api.as_user(cast.owner)

    created_ = api.post("/api/v1/endpoints", endpoint_body(cast.project, sla_target=target))
    assert created_.status_code == 201, created_.content
    patched = api.patch(f"/api/v1/endpoints/{created_.json()['id']}", {"sla_target": target})

    assert created_.json()["sla_target"] == target
    assert patched.status_code == 200, patched.content
    assert patched.json()["sla_target"] == target
    with time_machine.travel(datetime.now(UTC) + MINUTE):
        [row] = figures(api.get(URL + "sla", {"target": str(target)}))
    assert row["sla_target"] == target


def test_the_default_sla_target_is_standard(api, cast):
    api.as_user(cast.owner)

    response = api.post("/api/v1/endpoints", endpoint_body(cast.project))

    assert response.json()["sla_target"] == 99.9


@pytest.mark.parametrize("target", [99.5, 100, 99.999, "high", None, -1])
def test_other_sla_targets_are_refused(api, cast, make_endpoint, target):
    endpoint = make_endpoint(cast.project, sla_target=99.95)
    api.as_user(cast.owner)

    on_create = api.post("/api/v1/endpoints", endpoint_body(cast.project, sla_target=target))
    on_patch = api.patch(f"/api/v1/endpoints/{endpoint.id}", {"sla_target": target})

    for response in (on_create, on_patch):
        problem = assert_problem(response, 400, "validation_error")
        assert set(problem["errors"]) == {"sla_target"}
    endpoint.refresh_from_db()
    assert endpoint.sla_target == 99.95
