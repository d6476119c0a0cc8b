"""Checks with no response time: a heartbeat ping without a paired start is a check whose
`response_time_ms` is null (API-CONTRACT "Heartbeat endpoints"); the analytics figures
about time count only the checks that have one, while check counts and rates count all."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.models import CheckResult, Endpoint, EndpointStatus
from pipeline.heartbeats import heartbeat_deadlines_run
from tests.analytics.conftest import figures
from tests.helpers import iso

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=4)
MINUTE = timedelta(minutes=1)
UNTIMED = 20


def login(api, user):
    """A JWT issued at T0: one issued at the real now would be from the future."""
    with time_machine.travel(T0, tick=False):
        api.as_user(user)


@pytest.fixture
def heartbeat(api, cast):
    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.owner).post(
            "/api/v1/endpoints",
            {"project": str(cast.project.id), "name": "Backup", "type": "heartbeat"},
            format="json",
        )
    assert response.status_code == 201, response.content
    return Endpoint.objects.get(pk=response.json()["id"])


def ping(client, endpoint, suffix, at):
    """A ping at `at`, then the deadline loop's run at that moment, which processes the
    pings of an `up` heartbeat (stored by the route, turned into checks by the loop)."""
    with time_machine.travel(at, tick=False):
        assert client.get(f"/ping/{endpoint.ping_key}{suffix}").status_code == 200
    heartbeat_deadlines_run(now=at)


@pytest.fixture
def pinged(client, heartbeat):
    """One timed run of 30 s, then `UNTIMED` success pings with no start."""
    ping(client, heartbeat, "/start", T0)
    ping(client, heartbeat, "", T0 + timedelta(seconds=30))
    for minute in range(1, UNTIMED + 1):
        ping(client, heartbeat, "", T0 + minute * MINUTE)
    return heartbeat


def summary(api, endpoint):
    span = {"from": iso(T0), "to": iso(T0 + timedelta(hours=1)), "endpoint": str(endpoint.id)}
    with time_machine.travel(LATER, tick=False):
        [row] = figures(api.get("/api/v1/analytics/summary", span))
    return row


def test_a_success_ping_without_a_start_is_a_check_with_a_null_time(api, cast, pinged):
    login(api, cast.member)

    with time_machine.travel(LATER, tick=False):
        response = api.get(f"/api/v1/endpoints/{pinged.id}/checks", {"page_size": 100})

    assert response.status_code == 200
    times = [check["response_time_ms"] for check in response.json()["results"]]
    assert times == [None] * UNTIMED + [30_000.0]  # newest first; the run is the oldest
    assert CheckResult.objects.filter(response_time_ms__isnull=True).count() == UNTIMED


def test_analytics_time_figures_count_only_timed_checks(api, cast, pinged):
    login(api, cast.owner)

    row = summary(api, pinged)

    assert (row["checks"], row["failures"], row["success_rate"]) == (UNTIMED + 1, 0, 100.0)
    # Untimed pings taken as 0 ms would make the average 30 s / 21, the minimum 0 and the
    # 95th percentile 0 (20 of 21 checks).
    assert (row["avg_ms"], row["min_ms"], row["max_ms"]) == (30_000.0, 30_000.0, 30_000.0)
    assert row["p95_ms"] == pytest.approx(30_000.0, rel=0.1)
    assert row["p50_ms"] == pytest.approx(30_000.0, rel=0.1)


def test_the_response_time_series_and_chart_skip_untimed_checks(api, client, cast, pinged):
    login(api, cast.owner)
    span = {"from": iso(T0), "to": iso(T0 + timedelta(hours=1)), "bucket": "5m"}

    with time_machine.travel(LATER, tick=False):
        [row] = figures(api.get("/api/v1/analytics/response-time", span))
        client.force_login(cast.owner)
        page = client.get(f"/endpoints/{pinged.id}", {"period": "24h"})

    first, second = row["points"][:2]
    assert (first["count"], first["avg_ms"], first["p95_ms"]) == (5, 30_000.0, 30_000.0)
    assert (second["count"], second["avg_ms"], second["min_ms"]) == (5, None, None)
    assert page.status_code == 200


def test_a_rebuild_keeps_the_timed_count(pinged):
    from analytics.models import FiveMinuteRollup
    from analytics.services import rollups_rebuild

    with time_machine.travel(LATER, tick=False):
        rollups_rebuild(endpoint_ids=[pinged.pk], start=T0, end=T0 + timedelta(hours=1))

    rows = FiveMinuteRollup.objects.filter(endpoint=pinged).order_by("bucket")
    assert [(r.count, r.timed, r.sum_ms) for r in rows[:2]] == [(5, 1, 30_000.0), (5, 0, 0.0)]


def test_a_probes_checks_keep_their_times(api, cast, make_endpoint, record):
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project)
    record(endpoint, [(T0, True, 100.0), (T0 + MINUTE, True, 300.0), (T0 + 2 * MINUTE, False, 2.0)])
    login(api, cast.owner)

    with time_machine.travel(LATER, tick=False):
        checks = api.get(f"/api/v1/endpoints/{endpoint.id}/checks").json()["results"]
    row = summary(api, endpoint)

    assert [c["response_time_ms"] for c in checks] == [2.0, 300.0, 100.0]
    assert (row["checks"], row["avg_ms"], row["min_ms"], row["max_ms"]) == (3, 200.0, 100.0, 300.0)


def test_a_check_with_no_time_is_never_degraded(cast, make_endpoint, record):
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, config={"degraded_above_ms": 500})
    record(endpoint, [(T0, True, None)])

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP
    record(endpoint, [(T0 + MINUTE, True, 900.0)])
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DEGRADED
