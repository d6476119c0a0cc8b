"""Exact figures on constructed data: one endpoint, 1,440 checks a day, a 43-minute incident."""

import math
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from analytics import histogram
from monitoring.models import Incident
from tests.analytics.conftest import figures

T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
OUTAGE = range(600, 643)  # minutes 600 to 642 fail: 43 checks, an incident of 43 minutes


def ms_of(minute: int) -> float:
    """Spread response times from 20 ms to ~900 ms, deterministically."""
    return 20.0 + (minute * 37) % 880 + (minute % 7) / 10


@pytest.fixture
def day(cast, make_endpoint, record):
    """Created at T0, checked every minute of the day after T0; or created earlier and
    checked every hour from then to T0 as well (watching starts with the first check)."""

    def build(created: datetime = T0, **fields):
        with time_machine.travel(created, tick=False):
            endpoint = make_endpoint(cast.project, interval_seconds=60, **fields)
        before = [(created + h * HOUR, True, 50.0) for h in range((T0 - created) // HOUR)]
        checks = [
            (T0 + i * MINUTE, i not in OUTAGE, ms_of(i), "" if i not in OUTAGE else "HTTP 503")
            for i in range(1440)
        ]
        assert record(endpoint, before + checks) == len(before) + 1440
        return endpoint

    return build


@pytest.fixture
def at_day_end():
    with time_machine.travel(T0 + DAY, tick=False):
        yield


def test_the_engine_opened_one_43_minute_incident(day):
    endpoint = day()

    incident = Incident.objects.get(endpoint=endpoint)
    assert incident.started_at == T0 + 600 * MINUTE
    assert incident.resolved_at == T0 + 643 * MINUTE
    assert incident.duration_seconds == 43 * 60


def test_uptime_is_time_weighted_from_the_incident(api, cast, day, at_day_end):
    endpoint = day()
    api.as_user(cast.owner)

    [row] = figures(api.get("/api/v1/analytics/uptime", {"endpoint": str(endpoint.id)}))

    exact = round(100 * (1 - 43 * 60 / 86_400), 4)  # 97.0139
    assert row["uptime_24h"] == row["uptime_7d"] == row["uptime_30d"] == exact
    assert row["success_rate_24h"] == round(100 * 1397 / 1440, 4)


def test_summary_figures_are_exact(api, cast, day, at_day_end):
    endpoint = day()
    api.as_user(cast.owner)
    successes = sorted(ms_of(i) for i in range(1440) if i not in OUTAGE)

    [row] = figures(api.get("/api/v1/analytics/summary", {"endpoint": str(endpoint.id)}))

    assert row["checks"] == 1440
    assert row["failures"] == 43
    assert row["success_rate"] == round(100 * 1397 / 1440, 4)
    assert row["error_rate"] == round(100 * 43 / 1440, 4)
    assert row["avg_ms"] == pytest.approx(sum(successes) / len(successes), abs=0.001)
    assert row["min_ms"] == successes[0]
    assert row["max_ms"] == successes[-1]
    for name, q in (("p50_ms", 0.50), ("p95_ms", 0.95), ("p99_ms", 0.99)):
        exact = successes[math.ceil(q * len(successes)) - 1]
        assert abs(histogram.bucket_of(row[name]) - histogram.bucket_of(exact)) <= 1, name
        low, high = histogram.bounds(histogram.bucket_of(exact))
        assert low <= row[name] <= high, (name, row[name], exact)


def test_sla_over_the_day_spends_every_tiers_budget(api, cast, day, at_day_end):
    endpoint = day()
    api.as_user(cast.owner)

    [row] = figures(api.get("/api/v1/analytics/sla", {"endpoint": str(endpoint.id)}))

    assert row["watched_s"] == 86_400
    assert row["downtime_s"] == 2_580
    tiers = {tier["target"]: tier for tier in row["tiers"]}
    assert [tier["tier"] for tier in row["tiers"]] == ["Standard", "High", "Premium"]
    for target in (99.9, 99.95, 99.99):
        tier = tiers[target]
        share = (100 - target) / 100
        assert tier["allowed_downtime_month_s"] == round(share * 30 * 86_400, 3)
        assert tier["allowed_downtime_year_s"] == round(share * 365 * 86_400, 3)
        assert tier["allowed_downtime_s"] == round(share * 86_400, 3)
        assert tier["downtime_s"] == 2_580
        assert tier["budget_remaining_s"] == 0
        assert tier["compliant"] is False


def test_the_spec_table_of_allowed_downtime(api, cast, day, at_day_end):
    endpoint = day()
    api.as_user(cast.owner)

    [row] = figures(api.get("/api/v1/analytics/sla", {"endpoint": str(endpoint.id)}))

    month = {t["target"]: t["allowed_downtime_month_s"] / 60 for t in row["tiers"]}
    year = {t["target"]: t["allowed_downtime_year_s"] / 3600 for t in row["tiers"]}
    assert round(month[99.9]) == 43
    assert round(year[99.9], 1) == 8.8
    assert round(month[99.95]) == 22
    assert round(year[99.95], 1) == 4.4
    assert round(month[99.99], 1) == 4.3
    assert round(year[99.99] * 60) == 53


def test_sla_over_30_days_with_the_43_minutes(api, cast, day, at_day_end):
    endpoint = day(created=T0 + DAY - 30 * DAY)
    api.as_user(cast.owner)

    [row] = figures(
        api.get("/api/v1/analytics/sla", {"endpoint": str(endpoint.id), "period": "30d"})
    )

    tiers = {tier["target"]: tier for tier in row["tiers"]}
    assert row["uptime"] == round(100 * (1 - 2_580 / (30 * 86_400)), 4)  # 99.9005
    assert tiers[99.9]["compliant"] is True
    assert tiers[99.9]["allowed_downtime_s"] == 2_592
    assert tiers[99.9]["budget_remaining_s"] == 12
    assert tiers[99.95]["compliant"] is False
    assert tiers[99.95]["budget_remaining_s"] == 0
    assert tiers[99.99]["compliant"] is False


def test_one_target_narrows_the_tiers(api, cast, day, at_day_end):
    endpoint = day(sla_target=99.95)
    api.as_user(cast.owner)

    [row] = figures(
        api.get("/api/v1/analytics/sla", {"endpoint": str(endpoint.id), "target": "99.95"})
    )

    assert row["sla_target"] == 99.95
    assert [tier["target"] for tier in row["tiers"]] == [99.95]


def test_a_second_over_budget_is_not_compliant_even_when_uptime_rounds_up():
    from analytics.selectors import sla_tiers

    [over] = sla_tiers(30 * 86_400, 260, [99.99])  # 259.2 s allowed; uptime rounds to 99.99
    [exact] = sla_tiers(30 * 86_400, 2_592, [99.9])  # exactly the budget

    assert over["uptime"] == 99.99
    assert (over["compliant"], over["budget_remaining_s"]) == (False, 0)
    assert (exact["compliant"], exact["budget_remaining_s"]) == (True, 0)
