"""Incident reads stay within the reader's organization (issue 26: one organization's
incidents must not slow another's pages): bounded by the organization's id, read through
the organization's indexes."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Project
from monitoring.models import Incident
from monitoring.selectors import incidents_open_first

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(cast, make_endpoint):
    """Incidents in the member's project, in a project of the organization the member is not
    given, a declared one, and another organization's (open and resolved in each)."""
    hidden = Project.objects.create(organization=cast.org, name="Hidden")
    made = {}
    for name, project in [
        ("shown", cast.project),
        ("hidden", hidden),
        ("other", cast.other_project),
    ]:
        endpoint = make_endpoint(project, name=name)
        made[f"{name} resolved"] = Incident.objects.create(
            endpoint=endpoint, started_at=T0, resolved_at=T0 + timedelta(minutes=5)
        )
        made[f"{name} open"] = Incident.objects.create(
            endpoint=endpoint, started_at=T0 + timedelta(hours=1)
        )
    made["declared"] = Incident.objects.create(
        organization=cast.org, kind="manual", title="Announced", started_at=T0
    )
    return made


def names(world, incidents):
    by_id = {incident.pk: name for name, incident in world.items()}
    return {by_id[incident.pk] for incident in incidents}


def test_an_owner_reads_the_organizations_incidents_in_one_query_by_its_id(cast, world):
    with CaptureQueriesContext(connection) as captured:
        seen = list(Incident.objects.visible_to(cast.owner))

    assert names(world, seen) == {
        "shown resolved",
        "shown open",
        "hidden resolved",
        "hidden open",
        "declared",
    }
    (sql,) = [query["sql"] for query in captured.captured_queries]
    assert '"monitoring_incident"."organization_id" =' in sql
    assert "accounts_project" not in sql
    assert "monitoring_endpoint" not in sql


def test_a_member_reads_the_granted_projects_incidents_bounded_by_the_organization(cast, world):
    with CaptureQueriesContext(connection) as captured:
        seen = list(Incident.objects.visible_to(cast.member))
        still_open = list(Incident.objects.visible_to(cast.member).open())

    assert names(world, seen) == {"shown resolved", "shown open", "declared"}
    assert names(world, still_open) == {"shown open", "declared"}
    incident_reads = [
        q["sql"] for q in captured.captured_queries if "monitoring_incident" in q["sql"]
    ]
    assert len(incident_reads) == 2
    for sql in incident_reads:
        # The organization's id is a condition of its own, outside the OR over projects.
        where = sql.split(" WHERE ", 1)[1]
        assert where.startswith('("monitoring_incident"."organization_id" =')


def plan(queryset) -> str:
    """PostgreSQL's plan of the queryset's statement, sequential scans and sorts priced
    out as for a large table (these test tables hold a handful of rows)."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.postgres("reads PostgreSQL's plans")
@pytest.mark.parametrize("role", ["owner", "member"])
def test_the_incident_list_reads_a_page_in_order_from_the_organizations_index(cast, world, role):
    user = getattr(cast, role)
    page = incidents_open_first(user)[:50]

    text = plan(page)

    assert "incident_org_open_first_idx" in text, text
    assert "Sort" not in text, text
    assert page[0].pk in {world["shown open"].pk, world["hidden open"].pk}


@pytest.mark.postgres("reads PostgreSQL's plans")
@pytest.mark.parametrize("role", ["owner", "member"])
def test_open_incidents_are_read_from_the_organizations_open_index(cast, world, role):
    user = getattr(cast, role)
    opened = Incident.objects.visible_to(user).open().order_by("-started_at")[:10]

    text = plan(opened)

    assert "incident_org_open_idx" in text, text
    assert "incident_one_open_per_endpoint" not in text, text
