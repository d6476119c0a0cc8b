"""The alert models moved from `monitoring` to the `alerts` app without losing a row: a
PostgreSQL database holding channels, deliveries and maintenance windows in the schema from
before the move is migrated forward, and every row, link and content type is found again
through the new app (issue 18)."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from alerts.models import Delivery, DeliveryAttempt, MaintenanceWindow, NotificationChannel

pytestmark = pytest.mark.postgres("proves the move on the production database engine")

BEFORE_THE_MOVE = [("monitoring", "0006_delivery_held_idx"), ("alerts", None)]
MOVED = ["notificationchannel", "maintenancewindow", "delivery", "deliveryattempt"]
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate the test database to the targets; returns the historical apps there."""
    executor = MigrationExecutor(connection)
    state = executor.migrate(targets)
    return state.apps


def latest() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before_the_move(transactional_db: None) -> Iterator[Any]:
    """The database as it was before the move; migrated to the latest again afterwards."""
    try:
        yield migrate(BEFORE_THE_MOVE)
    finally:
        migrate(latest())
        ContentType.objects.clear_cache()
    assert MigrationExecutor(connection).migration_plan(latest()) == []


def seed(old: Any) -> dict[str, Any]:
    """Rows of every moved model, written through the models of the old schema."""
    organization = old.get_model("accounts", "Organization").objects.create(name="Acme")
    project = old.get_model("accounts", "Project").objects.create(
        organization=organization, name="Shop"
    )
    endpoint = old.get_model("monitoring", "Endpoint").objects.create(
        project=project, name="Checkout", type="http", target="https://shop.test/health"
    )
    incident = old.get_model("monitoring", "Incident").objects.create(
        endpoint=endpoint, started_at=T0
    )
    channel = old.get_model("monitoring", "NotificationChannel").objects.create(
        organization=organization,
        name="Ops hook",
        kind="webhook",
        config={"url": "https://hooks.test/in"},
        secret="whsec-kept",
    )
    channel.projects.set([project])
    channel.endpoints.set([endpoint])
    delivery = old.get_model("monitoring", "Delivery").objects.create(
        channel=channel,
        incident=incident,
        event="incident.opened",
        event_id="6f1c7c5e-2f6b-4a7e-9d43-8c1f0b1e2a33",
        occurred_at=T0,
        status="delivered",
        attempts=2,
    )
    attempts = [
        old.get_model("monitoring", "DeliveryAttempt").objects.create(
            delivery=delivery, attempted_at=T0 + timedelta(seconds=n), ok=ok, duration_ms=12.5
        )
        for n, ok in enumerate([False, True])
    ]
    window = old.get_model("monitoring", "MaintenanceWindow").objects.create(
        organization=organization, name="Upgrade", starts_at=T0, ends_at=T0 + timedelta(hours=1)
    )
    window.projects.set([project])
    window.endpoints.set([endpoint])
    return {
        "channel": channel.pk,
        "delivery": delivery.pk,
        "attempts": [a.pk for a in attempts],
        "window": window.pk,
        "project": project.pk,
        "endpoint": endpoint.pk,
        "incident": incident.pk,
        "content_types": content_types_under_monitoring(old),
    }


def content_types_under_monitoring(old: Any) -> dict[str, int]:
    """The moved models' content types as they were: labelled `monitoring`."""
    types = old.get_model("contenttypes", "ContentType").objects
    types.filter(app_label__in=["monitoring", "alerts"], model__in=MOVED).delete()
    return {model: types.create(app_label="monitoring", model=model).pk for model in MOVED}


def test_the_move_to_the_alerts_app_keeps_every_row_link_and_content_type(before_the_move):
    with pytest.raises(LookupError):
        before_the_move.get_model("alerts", "NotificationChannel")
    seeded = seed(before_the_move)

    migrate(latest())

    channel = NotificationChannel.objects.get(pk=seeded["channel"])
    assert (channel.name, channel.kind, channel.config) == (
        "Ops hook",
        "webhook",
        {"url": "https://hooks.test/in"},
    )
    assert channel.secret == "whsec-kept"
    assert [p.pk for p in channel.projects.all()] == [seeded["project"]]
    assert [e.pk for e in channel.endpoints.all()] == [seeded["endpoint"]]
    delivery = Delivery.objects.get(pk=seeded["delivery"])
    assert (delivery.channel_id, delivery.incident_id) == (seeded["channel"], seeded["incident"])
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert list(delivery.tries.values_list("pk", "ok")) == list(
        zip(seeded["attempts"], [False, True], strict=True)
    )
    assert DeliveryAttempt.objects.count() == 2
    window = MaintenanceWindow.objects.get(pk=seeded["window"])
    assert (window.name, window.starts_at, window.ends_at) == (
        "Upgrade",
        T0,
        T0 + timedelta(hours=1),
    )
    assert [p.pk for p in window.projects.all()] == [seeded["project"]]
    assert [e.pk for e in window.endpoints.all()] == [seeded["endpoint"]]
    ContentType.objects.clear_cache()
    relabelled = {
        ct.model: ct.pk for ct in ContentType.objects.filter(app_label="alerts", model__in=MOVED)
    }
    assert relabelled == seeded["content_types"]
    assert not ContentType.objects.filter(app_label="monitoring", model__in=MOVED).exists()
    assert (
        ContentType.objects.get_for_model(NotificationChannel).pk
        == relabelled["notificationchannel"]
    )


@pytest.fixture
def before_timed_rollups(transactional_db: None) -> Iterator[Any]:
    """The database before rollups counted their timed checks; the latest again after."""
    try:
        yield migrate([("analytics", "0002_drop_rollup_bucket_indexes")])
    finally:
        migrate(latest())
    assert MigrationExecutor(connection).migration_plan(latest()) == []


def test_stored_rollups_count_their_successes_as_timed(before_timed_rollups):
    from analytics.models import DayRollup, FiveMinuteRollup, HourRollup

    organization = before_timed_rollups.get_model("accounts", "Organization").objects.create(
        name="Acme"
    )
    project = before_timed_rollups.get_model("accounts", "Project").objects.create(
        organization=organization, name="Shop"
    )
    endpoint = before_timed_rollups.get_model("monitoring", "Endpoint").objects.create(
        project=project, name="Checkout", type="http", target="https://shop.test/health"
    )
    for name in ("FiveMinuteRollup", "HourRollup", "DayRollup"):
        before_timed_rollups.get_model("analytics", name).objects.create(
            endpoint_id=endpoint.pk, bucket=T0, count=12, failures=2, sum_ms=1000.0
        )

    migrate(latest())

    for tier in (FiveMinuteRollup, HourRollup, DayRollup):
        assert list(tier.objects.values_list("count", "failures", "timed")) == [(12, 2, 10)]
