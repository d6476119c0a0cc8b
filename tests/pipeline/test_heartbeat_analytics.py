"""Heartbeats in analytics and SLA as probes are: run durations are their response times,
failure pings their errors, missed pings and failures their downtime; they sit beside probes
in the comparison and in the lists, a late one shown late."""

from datetime import timedelta
from uuid import uuid4

import pytest
import time_machine

from analytics import histogram
from monitoring.models import EndpointStatus
from tests.analytics.conftest import figures
from tests.pipeline.conftest import T0
from tests.web.conftest import endpoint_row

pytestmark = pytest.mark.django_db

URL = "/api/v1/analytics/"
MINUTE = timedelta(minutes=1)
RUNS_MS = [30_000.0, 90_000.0, 60_000.0, 45_000.0]  # the successful runs' durations
DOWN_S = 6 * 60 + 225  # /fail at 20:00 until 26:00; /3 at 37:00 until 40:45
NOW = T0 + 51 * MINUTE  # a minute past the period after the last ping: late
WATCHED_S = 51 * 60 - 30  # watched from the first check, at 00:30


@pytest.fixture
def job(make_heartbeat, send_ping, settle):
    """A 10-minute job at T0: four runs timed by start/end pairs, a failure ping, a failed
    run (exit status 3), then silence until it is late."""
    heartbeat = make_heartbeat(interval_seconds=600, config={"grace_seconds": 600})

    def run(start, seconds, end=""):
        rid = uuid4()
        send_ping(heartbeat, f"/start?rid={rid}", at=T0 + start)
        send_ping(heartbeat, f"{end}?rid={rid}", at=T0 + start + timedelta(seconds=seconds))

    run(0 * MINUTE, 30)
    run(10 * MINUTE, 90)
    send_ping(heartbeat, "/fail", at=T0 + 20 * MINUTE)
    run(25 * MINUTE, 60)
    run(35 * MINUTE, 120, "/3")
    run(40 * MINUTE, 45, "/0")
    settle(NOW)
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.LATE
    return heartbeat


@pytest.fixture
def at_now():
    with time_machine.travel(NOW, tick=False):
        yield


def assert_run_durations(row):
    assert row["checks"] == 6
    assert row["failures"] == 2
    assert row["success_rate"] == round(100 * 4 / 6, 4)
    assert row["error_rate"] == round(100 * 2 / 6, 4)
    assert row["avg_ms"] == sum(RUNS_MS) / 4
    assert (row["min_ms"], row["max_ms"]) == (30_000.0, 90_000.0)
    # p95 of four runs is the longest, read from the histogram: within its bucket.
    low, high = histogram.bounds(histogram.bucket_of(90_000.0))
    assert low <= row["p95_ms"] <= high


def test_the_summary_shows_run_durations_and_ping_rates(api, cast, job, at_now):
    api.as_user(cast.member)

    [row] = figures(api.get(URL + "summary", {"endpoint": str(job.id)}))

    assert_run_durations(row)
    assert row["status"] == "late"


def test_uptime_counts_failure_pings_until_the_next_success_as_downtime(api, cast, job, at_now):
    api.as_user(cast.member)

    [row] = figures(api.get(URL + "uptime", {"endpoint": str(job.id)}))

    assert row["uptime_24h"] == round(100 * (1 - DOWN_S / WATCHED_S), 4)
    assert row["success_rate_24h"] == round(100 * 4 / 6, 4)


def test_the_sla_report_counts_the_heartbeats_downtime(api, cast, job, at_now):
    api.as_user(cast.member)

    [row] = figures(api.get(URL + "sla", {"endpoint": str(job.id)}))

    assert (row["watched_s"], row["downtime_s"]) == (WATCHED_S, DOWN_S)
    standard = next(tier for tier in row["tiers"] if tier["target"] == 99.9)
    assert standard["downtime_s"] == DOWN_S
    assert standard["compliant"] is False


def test_the_sla_csv_has_the_heartbeat(api, cast, job, at_now):
    api.as_user(cast.member)

    response = api.get(URL + "sla", {"endpoint": str(job.id), "format": "csv"})

    assert response.status_code == 200, response.content
    assert "Nightly backup" in response.content.decode()


def test_compare_puts_the_heartbeat_beside_a_probe(api, cast, job, make_endpoint, record, at_now):
    probe = make_endpoint(cast.project, name="Website")
    record(probe, [(T0 + m * MINUTE, True, 120.0) for m in range(51)])
    api.as_user(cast.member)

    response = api.get(URL + "compare", {"endpoints": f"{job.id},{probe.id}", "bucket": "1h"})

    assert response.status_code == 200, response.content
    heartbeat_row, probe_row = response.json()["results"]
    assert (heartbeat_row["endpoint"], probe_row["endpoint"]) == (str(job.id), str(probe.id))
    assert_run_durations(heartbeat_row)
    assert heartbeat_row["status"] == "late"
    assert heartbeat_row["sla"]["downtime_s"] == DOWN_S
    assert [p["count"] for p in heartbeat_row["points"] if p["count"]] == [6]
    assert probe_row["avg_ms"] == 120.0


def test_the_compare_page_and_the_lists_show_the_heartbeat_late(
    api, cast, client, job, make_endpoint, at_now
):
    probe = make_endpoint(cast.project, name="Website")
    client.force_login(cast.member)

    compare = client.get(f"/compare?endpoints={job.id}&endpoints={probe.id}")
    overview = client.get("/")
    listing = api.as_user(cast.member).get("/api/v1/endpoints", {"type": "heartbeat"})

    assert compare.status_code == 200
    assert endpoint_row(compare, job) == [
        "Nightly backup",
        "Late (ping overdue, within grace)",
        "56.25 s",  # avg, p95, min, max of the runs
        "90.00 s",
        "30.00 s",
        "90.00 s",
        "80.693 %",  # 1 - 585 s down / 3,030 s watched
        "66.67 %",
        "6",
        "99.9 %: missed",
    ]
    shown = endpoint_row(overview, job)
    assert shown[1] == "Late (ping overdue, within grace)"
    assert (shown[3], shown[6]) == ("80.69 %", "56.25 s")
    assert [(e["name"], e["status"]) for e in listing.json()["results"]] == [
        ("Nightly backup", "late")
    ]


def test_a_success_ping_with_no_start_adds_no_response_time(
    api, cast, make_heartbeat, send_ping, at_now
):
    heartbeat = make_heartbeat()
    send_ping(heartbeat, "/start", at=T0)
    send_ping(heartbeat, at=T0 + timedelta(seconds=30))
    send_ping(heartbeat, at=T0 + timedelta(seconds=50))  # no start: no duration
    api.as_user(cast.member)

    [row] = figures(api.get(URL + "summary", {"endpoint": str(heartbeat.id)}))

    assert row["checks"] == 2
    assert (row["avg_ms"], row["min_ms"], row["max_ms"]) == (30_000.0, 30_000.0, 30_000.0)


def test_downtime_inside_a_maintenance_window_counts_in_no_sla(api, cast, job, at_now):
    window = {
        "name": "Backup server moved",
        "starts_at": (T0 + 20 * MINUTE).isoformat(),
        "ends_at": (T0 + 30 * MINUTE).isoformat(),
        "endpoints": [str(job.id)],
    }
    planned = api.as_user(cast.owner).post("/api/v1/maintenance-windows", window, format="json")
    assert planned.status_code == 201, planned.content

    [row] = figures(api.get(URL + "sla", {"endpoint": str(job.id)}))

    # The /fail outage (20:00 to 26:00) fell in the window; the exit status 3 one did not.
    assert (row["watched_s"], row["downtime_s"]) == (WATCHED_S - 600, 225)
