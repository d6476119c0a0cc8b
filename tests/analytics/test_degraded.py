"""Degraded endpoints (successes slower than `config.degraded_above_ms`) count as up for
uptime and SLA, and show amber on the endpoint page's response and availability charts."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from analytics.selectors import degraded_stretches
from healthmon.intervals import Window
from tests.analytics.conftest import figures
from tests.helpers import iso

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=4)
MINUTE = timedelta(minutes=1)

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow(cast, make_endpoint, record):
    """Fast for 10 minutes, slow for 20, fast again for 30: degraded 12:10-12:30."""
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, name="Checkout", config={"degraded_above_ms": 500})
    checks = [(T0 + m * MINUTE, True, 900.0 if 10 <= m < 30 else 100.0) for m in range(60)]
    record(endpoint, checks)
    return endpoint


def test_degraded_time_counts_as_up_for_uptime_and_sla(api, cast, slow):
    span = {"from": iso(T0), "to": iso(T0 + timedelta(hours=1)), "endpoint": str(slow.id)}
    with time_machine.travel(LATER, tick=False):
        api.as_user(cast.owner)
        [sla] = figures(api.get("/api/v1/analytics/sla", span))
        [summary] = figures(api.get("/api/v1/analytics/summary", {"endpoint": str(slow.id)}))

    assert (sla["checks"], sla["uptime"], sla["downtime_s"]) == (60, 100.0, 0.0)
    assert all(tier["compliant"] for tier in sla["tiers"])
    assert summary["uptime_24h"] == 100.0


def test_the_stretches_come_from_the_status_history(slow):
    whole = Window(T0, T0 + timedelta(hours=1))
    assert degraded_stretches(slow, whole, LATER) == [(T0 + 10 * MINUTE, T0 + 30 * MINUTE)]

    # A window opening while degraded starts degraded; one closing while degraded ends so.
    middle = Window(T0 + 20 * MINUTE, T0 + 25 * MINUTE)
    assert degraded_stretches(slow, middle, LATER) == [(middle.start, middle.end)]
    after = Window(T0 + 40 * MINUTE, T0 + 50 * MINUTE)
    assert degraded_stretches(slow, after, LATER) == []
