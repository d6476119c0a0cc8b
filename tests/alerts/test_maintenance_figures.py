"""Maintenance in the figures: downtime inside a window counts in no uptime or SLA figure,
through the analytics API and on the endpoint page's availability chart."""

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from accounts.services import project_create
from alerts import services
from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


@pytest.fixture
def now() -> Any:
    return timezone.now().replace(microsecond=0)


@pytest.fixture
def down_between(record: Callable[..., int], now: Any) -> Callable[..., None]:
    """Make an endpoint watched for three hours (checked first three hours ago: watching
    starts with the first check), down from `a` to `b` minutes ago."""

    def run(endpoint: Endpoint, a: int, b: int) -> None:
        past = now - 180 * MINUTE
        Endpoint.objects.filter(pk=endpoint.pk).update(created_at=past, watch_started_at=past)
        endpoint.refresh_from_db()
        checks = [
            (past, True, 20.0),
            (now - a * MINUTE, False, 20.0),
            (now - b * MINUTE, True, 20.0),
        ]
        record(endpoint, checks)

    return run


def window(org: Any, now: Any, a: int, b: int, **scope: Any) -> MaintenanceWindow:
    """A one-off window from `a` to `b` minutes ago."""
    return services.maintenance_window_save(
        window=MaintenanceWindow(organization=org),
        starts_at=now - a * MINUTE,
        ends_at=now - b * MINUTE,
        **scope,
    )


def report(api: Any, user: Any, name: str, now: Any, **query: Any) -> list[dict[str, Any]]:
    query = {"from": (now - 180 * MINUTE).isoformat(), "to": now.isoformat(), **query}
    response = api.as_user(user).get(f"/api/v1/analytics/{name}?{urlencode(query)}")
    assert response.status_code == 200, response.content
    return response.json()["results"]


def sla_of(api: Any, user: Any, endpoint: Endpoint, now: Any) -> dict[str, Any]:
    (row,) = report(api, user, "sla", now, endpoint=str(endpoint.pk), target="99.9")
    return row


def test_downtime_inside_a_window_leaves_the_sla_figures_as_they_were(
    api, cast, make_endpoint, down_between, now
):
    held = make_endpoint(cast.project, name="Held", failure_threshold=1)
    other = make_endpoint(
        project_create(organization=cast.org, name="Other"), name="Other", failure_threshold=1
    )
    before = sla_of(api, cast.owner, held, now)
    window(cast.org, now, 120, 30, projects=[cast.project])
    down_between(held, 100, 70)
    down_between(other, 100, 70)

    figures = sla_of(api, cast.owner, held, now)
    assert (figures["downtime_s"], figures["uptime"]) == (0.0, 100.0)
    (tier,) = figures["tiers"]
    assert tier["compliant"] is True
    assert tier["budget_remaining_s"] == tier["allowed_downtime_s"]
    assert figures["watched_s"] == pytest.approx(90 * 60)  # 3 h less the 1.5 h window
    assert before["downtime_s"] == 0.0
    # The same outage outside any window counts in full.
    assert sla_of(api, cast.owner, other, now)["downtime_s"] == 30 * 60


def test_only_the_part_of_an_incident_outside_the_window_counts(
    api, cast, make_endpoint, down_between, now
):
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    window(cast.org, now, 120, 30, endpoints=[endpoint])
    down_between(endpoint, 40, 20)

    assert sla_of(api, cast.owner, endpoint, now)["downtime_s"] == 10 * 60
    (uptime,) = report(api, cast.owner, "uptime", now, endpoint=str(endpoint.pk))
    assert uptime["uptime_24h"] == pytest.approx(100 * (1 - 600 / (90 * 60)), abs=1e-3)


def test_another_organizations_window_changes_nothing(api, cast, make_endpoint, down_between, now):
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    window(cast.other_org, now, 120, 30)
    down_between(endpoint, 100, 70)

    assert sla_of(api, cast.owner, endpoint, now)["downtime_s"] == 30 * 60


def test_availability_lists_the_maintenance_and_the_chart_draws_it(
    api, cast, make_endpoint, down_between, now, client
):
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    window(cast.org, now, 120, 30)  # the whole organization
    down_between(endpoint, 100, 70)

    (row,) = report(api, cast.owner, "availability", now, endpoint=str(endpoint.pk), bucket="1h")
    (held,) = row["maintenance"]
    assert held["endpoint"] == str(endpoint.pk)
    assert (held["starts_at"], held["ends_at"]) == (
        (now - 120 * MINUTE).isoformat().replace("+00:00", "Z"),
        (now - 30 * MINUTE).isoformat().replace("+00:00", "Z"),
    )
    assert row["downtime_s"] == 0.0
    assert len(row["incidents"]) == 1  # still listed: it happened

    client.force_login(cast.owner)
    page = client.get(f"/endpoints/{endpoint.pk}?period=24h").content.decode()
    assert 'class="maintenance"' in page
    assert "Maintenance from" in page


def test_watched_time_less_maintenance_matches_a_second_by_second_count():
    import random
    from datetime import UTC, datetime

    from healthmon.intervals import merge, subtract

    t0 = datetime(2026, 11, 1, tzinfo=UTC)

    def spans(rng: random.Random, count: int) -> list[tuple[Any, Any]]:
        starts = sorted(rng.sample(range(0, 2000), count * 2))
        pairs = [(starts[i], starts[i + 1]) for i in range(0, len(starts), 2)]
        return [(t0 + timedelta(seconds=a), t0 + timedelta(seconds=b)) for a, b in pairs]

    rng = random.Random(7)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(200):
        watched = spans(rng, rng.randint(1, 4))
        holes = merge(spans(rng, rng.randint(0, 12)))
        left = subtract(watched, holes)
        second = timedelta(seconds=1)
        expected = {
            t0 + n * second
            for n in range(2000)
            if any(s <= t0 + n * second < e for s, e in watched)
            and not any(s <= t0 + n * second < e for s, e in holes)
        }
        got = {
            t0 + n * second for n in range(2000) if any(s <= t0 + n * second < e for s, e in left)
        }
        assert got == expected
        assert left == sorted(left)
