"""summary.json: Atlassian Statuspage's shape, public facts only."""

from datetime import timedelta

from django.utils import timezone

from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint, Incident
from statuspages.models import Component
from tests.statuspages.pages import declare, make_page


def summary(client, slug="acme"):
    response = client.get(f"/status/{slug}/summary.json")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.json()


def test_the_summary_has_the_contract_shape(cast, make_endpoint, record, client):
    api, web = make_endpoint(cast.project, name="API"), make_endpoint(cast.project, name="Web")
    now = timezone.now()
    record(api, [(now - timedelta(minutes=m), m != 2, 10.0) for m in range(1, 5)])
    Endpoint.objects.filter(pk=web.pk).update(status="degraded")
    make_page(cast.org, {"Core": [api], "Edge": [web]}, title="Acme status")

    document = summary(client)

    assert set(document) == {"page", "status", "components", "incidents", "scheduled_maintenances"}
    assert document["page"]["name"] == "Acme status"
    assert document["page"]["url"].endswith("/status/acme")
    assert document["page"]["updated_at"].endswith("Z")
    assert document["status"] == {"indicator": "minor", "description": "Degraded performance"}
    ids = [str(c.pk) for c in Component.objects.order_by("section__position")]
    assert document["components"] == [
        {
            "id": ids[0],
            "name": "API",
            "section": "Core",
            "status": "operational",
            "uptime_percent": 75.0,
        },
        {
            "id": ids[1],
            "name": "Web",
            "section": "Edge",
            "status": "degraded_performance",
            "uptime_percent": None,
        },
    ]
    assert document["incidents"] == []
    assert document["scheduled_maintenances"] == []


def test_unresolved_public_incidents_come_with_their_updates(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    now = timezone.now()
    declare(cast.org, [endpoint], at=now - timedelta(hours=1), updates=["Looking", "Found it"])
    declare(
        cast.org,
        [endpoint],
        at=now - timedelta(hours=3),
        title="Old",
        resolved_at=now - timedelta(hours=2),
        state="resolved",
    )
    declare(cast.org, [endpoint], at=now, title="Hidden", public=False)
    make_page(cast.org, {"Core": [endpoint]})

    document = summary(client)

    (incident,) = document["incidents"]
    assert incident["name"] == "Slow logins"
    assert incident["status"] == "investigating"
    assert incident["impact"] == "partial_outage"
    assert incident["resolved_at"] is None
    assert incident["components"] == [document["components"][0]["id"]]
    bodies = [u["body"] for u in incident["incident_updates"]]
    assert bodies == ["Found it", "Looking"]  # newest first
    assert incident["incident_updates"][0]["body_html"] == "<p>Found it</p>"
    assert document["components"][0]["status"] == "partial_outage"
    assert document["status"]["indicator"] == "major"


def test_an_automatic_incident_reads_as_its_component_being_down(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    Endpoint.objects.filter(pk=endpoint.pk).update(status="down")
    Incident.objects.create(endpoint=endpoint, started_at=timezone.now(), cause="db.internal down")
    make_page(cast.org, {"Core": [endpoint]})

    (incident,) = summary(client)["incidents"]

    assert incident["name"] == "API is down"
    assert [u["body"] for u in incident["incident_updates"]] == ["API is down — investigating"]
    assert "db.internal" not in str(incident)


def test_scheduled_maintenances_list_upcoming_and_active_windows(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    other = make_endpoint(cast.project, name="Elsewhere")
    now = timezone.now()
    active = MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Now",
        starts_at=now - timedelta(hours=1),
        ends_at=now + timedelta(hours=1),
    )
    MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Later",
        starts_at=now + timedelta(days=1),
        ends_at=now + timedelta(days=1, hours=2),
    )
    MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Past",
        starts_at=now - timedelta(days=1),
        ends_at=now - timedelta(hours=20),
    )
    narrowed = MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Not ours",
        starts_at=now,
        ends_at=now + timedelta(hours=1),
    )
    narrowed.endpoints.set([other])
    make_page(cast.org, {"Core": [endpoint]})

    document = summary(client)

    windows = document["scheduled_maintenances"]
    assert [(w["name"], w["status"]) for w in windows] == [
        ("Now", "in_progress"),
        ("Later", "scheduled"),
    ]
    assert windows[0]["id"] == str(active.pk)
    assert windows[0]["components"] == [document["components"][0]["id"]]
    assert document["status"]["indicator"] == "maintenance"
