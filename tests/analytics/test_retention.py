"""Retention: raw checks for RAW_RETENTION_DAYS, 5-minute rollups for their days, hourly
rollups for 90 days, daily rollups forever; figures read from rollups survive it."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from analytics import services
from analytics.models import DayRollup, FiveMinuteRollup, HourRollup
from analytics.tasks import apply_retention
from monitoring.models import CheckResult
from tests.analytics.conftest import figures

T0 = datetime(2026, 6, 1, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def history(cast, make_endpoint, record):
    """Checks stored on day 0 and on day 20, each stored at the time it ran."""
    with time_machine.travel(T0 - DAY, tick=False):
        endpoint = make_endpoint(cast.project)
    for day in (0, 20):
        at = T0 + day * DAY
        with time_machine.travel(at + timedelta(seconds=1), tick=False):
            record(endpoint, [(at, True, 10.0), (at + timedelta(seconds=30), False, 0.0)])
    return endpoint


def counts():
    return {
        "checks": CheckResult.objects.count(),
        "5m": FiveMinuteRollup.objects.count(),
        "1h": HourRollup.objects.count(),
        "1d": DayRollup.objects.count(),
    }


def test_each_kind_of_row_is_kept_for_its_own_time(history):
    assert counts() == {"checks": 4, "5m": 2, "1h": 2, "1d": 2}

    with time_machine.travel(T0 + 21 * DAY, tick=False):
        deleted = apply_retention()
    assert deleted == {"checks": 2, "check_days": 0, "rollups_5m": 1, "rollups_1h": 0}
    assert counts() == {"checks": 2, "5m": 1, "1h": 2, "1d": 2}

    with time_machine.travel(T0 + 95 * DAY, tick=False):
        services.retention_run()
    assert counts() == {"checks": 0, "5m": 0, "1h": 1, "1d": 2}

    with time_machine.travel(T0 + 3650 * DAY, tick=False):
        services.retention_run()
    assert counts() == {"checks": 0, "5m": 0, "1h": 0, "1d": 2}


def test_running_it_again_deletes_nothing_more(history):
    with time_machine.travel(T0 + 21 * DAY, tick=False):
        services.retention_run()
        assert services.retention_run() == {
            "checks": 0,
            "check_days": 0,
            "rollups_5m": 0,
            "rollups_1h": 0,
        }


def test_the_retention_days_come_from_the_settings(history, settings):
    settings.RAW_RETENTION_DAYS = 30
    settings.ROLLUP_5M_RETENTION_DAYS = 30

    with time_machine.travel(T0 + 21 * DAY, tick=False):
        services.retention_run()

    assert counts() == {"checks": 4, "5m": 2, "1h": 2, "1d": 2}


def test_deletes_go_in_batches(history, monkeypatch):
    monkeypatch.setattr(services, "RETENTION_BATCH", 1)

    with time_machine.travel(T0 + 21 * DAY, tick=False):
        assert services.retention_run()["checks"] == 2


def test_rollups_go_in_batches_of_endpoints_and_rows(cast, make_endpoint, record, monkeypatch):
    monkeypatch.setattr(services, "RETENTION_ENDPOINTS", 2)
    monkeypatch.setattr(services, "RETENTION_BATCH", 2)
    with time_machine.travel(T0 - DAY, tick=False):
        endpoints = [make_endpoint(cast.project) for _ in range(5)]
    for day in (0, 1, 2, 20):  # three old 5-minute rows per endpoint, one kept
        at = T0 + day * DAY
        with time_machine.travel(at + timedelta(seconds=1), tick=False):
            for endpoint in endpoints:
                record(endpoint, [(at, True, 10.0)])

    with time_machine.travel(T0 + 21 * DAY, tick=False):
        deleted = services.retention_run()

    assert deleted["rollups_5m"] == 15
    kept = FiveMinuteRollup.objects.values_list("endpoint_id", "bucket")
    assert sorted(kept) == sorted((e.pk, T0 + 20 * DAY) for e in endpoints)
    assert HourRollup.objects.count() == 20


def summary_after_retention(api, user, endpoint, start, end):
    """The endpoint's summary over [start, end), read 100 days on, after retention ran."""
    with time_machine.travel(T0 + 100 * DAY, tick=False):
        services.retention_run()
        api.as_user(user)
        params = {"endpoint": str(endpoint.id), "from": start.isoformat(), "to": end.isoformat()}
        [row] = figures(api.get("/api/v1/analytics/summary", params))
    return row


def test_figures_over_old_days_come_from_rollups_after_retention(api, cast, history):
    row = summary_after_retention(api, cast.owner, history, T0, T0 + 30 * DAY)

    assert (row["checks"], row["failures"], row["avg_ms"]) == (4, 2, 10.0)


def test_an_old_range_with_uneven_edges_reads_the_days_that_hold_it(api, cast, history, record):
    hourly = [(T0 + timedelta(days=1, hours=h), True, 20.0) for h in range(48)]
    with time_machine.travel(T0 + 3 * DAY, tick=False):
        record(history, hourly)
    start = T0 + timedelta(days=1, hours=7, minutes=3)  # 5-minute and hourly rows gone

    row = summary_after_retention(api, cast.owner, history, start, start + timedelta(hours=30))

    assert (row["checks"], row["avg_ms"]) == (48, 20.0)  # the two whole days, once each


def test_raw_checks_go_by_whole_days_before_the_setting(cast, make_endpoint, record, settings):
    settings.RAW_RETENTION_DAYS = 14
    with time_machine.travel(T0 - DAY, tick=False):
        endpoint = make_endpoint(cast.project)
    first_kept = T0 + 7 * DAY
    slots = [first_kept - timedelta(seconds=2), first_kept, first_kept + timedelta(hours=5)]
    for slot in slots:
        with time_machine.travel(slot + timedelta(seconds=1), tick=False):
            record(endpoint, [(slot, True, 10.0)])

    # 14 days before: first_kept + 6 h. Its day is kept whole, the one before goes whole.
    with time_machine.travel(first_kept + 14 * DAY + timedelta(hours=6), tick=False):
        deleted = services.retention_run()

    assert deleted["checks"] == 1
    assert sorted(CheckResult.objects.values_list("scheduled_for", flat=True)) == slots[1:]
