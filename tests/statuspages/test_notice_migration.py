"""An upgrade announces no maintenance window planned before notices existed: the
migration marks every existing window as announced (issue 23)."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from statuspages.models import MaintenanceNotice

pytestmark = pytest.mark.postgres("proves the data migration on the production engine")

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    return MigrationExecutor(connection).migrate(targets).apps


@pytest.fixture
def before(transactional_db: None) -> Iterator[Any]:
    try:
        yield migrate([("statuspages", "0001_initial")])
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()


def test_windows_from_before_notices_count_as_announced(before):
    org = before.get_model("accounts", "Organization").objects.create(name="Acme")
    windows = before.get_model("alerts", "MaintenanceWindow")
    made = [
        windows.objects.create(
            organization=org, name=f"w{n}", starts_at=T0, ends_at=T0 + timedelta(hours=1)
        ).pk
        for n in range(3)
    ]

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert sorted(MaintenanceNotice.objects.values_list("window_id", flat=True)) == sorted(made)
