"""Incidents and endpoints from before status pages migrate forward: each incident gains its
endpoint's organization and a state that matches whether it resolved, each endpoint a badge
key of its own (issue 23)."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from monitoring.models import Endpoint, Incident

pytestmark = pytest.mark.postgres("proves the data migration on the production engine")

BEFORE = [("monitoring", "0017_certificates")]
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def migrate(targets: list[tuple[str, str | None]]) -> Any:
    return MigrationExecutor(connection).migrate(targets).apps


def latest() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before(transactional_db: None) -> Iterator[Any]:
    try:
        yield migrate(BEFORE)
    finally:
        migrate(latest())
        ContentType.objects.clear_cache()


def test_incidents_gain_organization_and_state_and_endpoints_badge_keys(before):
    organizations = before.get_model("accounts", "Organization")
    projects = before.get_model("accounts", "Project")
    endpoints = before.get_model("monitoring", "Endpoint")
    incidents = before.get_model("monitoring", "Incident")
    made = {}
    for name in ("Acme", "Globex"):
        org = organizations.objects.create(name=name)
        project = projects.objects.create(organization=org, name="Shop")
        endpoint = endpoints.objects.create(
            project=project, name="Checkout", type="http", target="https://shop.test/"
        )
        made[name] = (
            org.pk,
            incidents.objects.create(endpoint=endpoint, started_at=T0).pk,
            incidents.objects.create(
                endpoint=endpoint, started_at=T0, resolved_at=T0 + timedelta(minutes=5)
            ).pk,
        )

    migrate(latest())

    for org_id, open_id, resolved_id in made.values():
        still_open = Incident.objects.get(pk=open_id)
        resolved = Incident.objects.get(pk=resolved_id)
        assert (still_open.organization_id, resolved.organization_id) == (org_id, org_id)
        assert (still_open.state, resolved.state) == ("investigating", "resolved")
        assert (still_open.kind, still_open.public) == ("automatic", True)
    keys = list(Endpoint.objects.values_list("badge_key", flat=True))
    assert len(set(keys)) == 2
    assert all(len(key) >= 20 for key in keys)
