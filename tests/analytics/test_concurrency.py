"""Concurrent ingest into the same rollup rows loses no check (PostgreSQL row locks)."""

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from accounts.models import Role, User
from accounts.services import organization_create
from analytics.models import TIERS
from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.checks import checks_record
from tests.concurrency import race
from tests.helpers import PASSWORD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("needs row locks"),
]

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def test_batches_racing_into_the_same_buckets_add_up():
    organization, project = organization_create(name="Acme")
    User.objects.create_user("o@acme.test", PASSWORD, organization=organization, role=Role.OWNER)
    endpoints = [
        endpoint_create(
            project=project,
            name=f"E{i}",
            type="http",
            target="https://example.com/",
            config=validate_config("http", {}),
        )
        for i in range(4)
    ]

    def batch(offset: int):
        def run() -> int:
            outcomes = [
                CheckOutcome(
                    endpoint.pk,
                    T0 + timedelta(seconds=offset + 10 * n),
                    T0 + timedelta(seconds=offset + 10 * n),
                    ProbeResult(ok=True, response_time_ms=1.0 + offset + n),
                )
                for endpoint in (endpoints if offset % 2 else reversed(endpoints))
                for n in range(5)
            ]
            return checks_record(outcomes=outcomes)

        return run

    stored = race(*(batch(offset) for offset in range(6)))

    assert stored == [20] * 6
    for tier in TIERS:
        rows = tier.objects.filter(endpoint__in=endpoints)
        assert sorted(row.count for row in rows) == [30] * 4, tier.__name__


def test_a_rebuild_and_ingest_at_once_lose_no_check(monkeypatch):
    from analytics import services
    from tests.analytics.test_rollups import recomputed_from_raw, stored_rollups

    _organization, project = organization_create(name="Acme")
    endpoint = endpoint_create(
        project=project,
        name="E",
        type="http",
        target="https://example.com/",
        config=validate_config("http", {}),
    )
    now = datetime.now(UTC)

    def outcome(seconds: int) -> CheckOutcome:
        at = now - timedelta(seconds=seconds)
        return CheckOutcome(endpoint.pk, at, at, ProbeResult(ok=True, response_time_ms=5.0))

    checks_record(outcomes=[outcome(s) for s in range(30, 300, 30)])
    rebuilding, original = threading.Event(), services._sums_by_bucket

    def slow_sums(*args):
        rebuilding.set()
        time.sleep(0.5)  # ingest tries to commit here, between the rebuild's read and write
        return original(*args)

    monkeypatch.setattr(services, "_sums_by_bucket", slow_sums)

    def rebuild() -> int:
        return services.rollups_rebuild(endpoint_ids=[endpoint.pk], start=now, end=now)

    def ingest() -> int:
        rebuilding.wait(5)
        return checks_record(outcomes=[outcome(1)])

    assert race(rebuild, ingest)[1] == 1
    assert CheckResult.objects.count() == 10
    assert stored_rollups() == recomputed_from_raw()
