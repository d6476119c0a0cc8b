"""Incident news reaches the public routes at once: declaring, updating, resolving or hiding
an incident through the API drops the cached page, summary.json, feeds and status badge of
every page showing its components, with the clock stopped (so no freshness expiry can
explain it) and no bump by hand. An automatic incident kept off status pages leaves them
while its component still shows the outage."""

from typing import Any

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from monitoring.models import Endpoint, EndpointStatus, Incident
from statuspages import cache as page_cache
from tests.statuspages.pages import make_page

INCIDENTS = "/api/v1/incidents"
ROUTES = ("", "/summary.json", "/history.atom", "/history.rss")


@pytest.fixture(autouse=True)
def _stopped_clock() -> Any:
    with time_machine.travel(timezone.now(), tick=False) as clock:
        yield clock


@pytest.fixture
def world(cast: Any, make_endpoint: Any) -> dict[str, Any]:
    api_endpoint = make_endpoint(cast.project, name="API")
    other = make_endpoint(cast.project, name="Elsewhere")
    page = make_page(cast.org, {"Core": [api_endpoint]})
    unrelated = make_page(cast.org, {"Other": [other]}, slug="other", name="Other")
    return {"endpoint": api_endpoint, "other": other, "page": page, "unrelated": unrelated}


def read(suffix: str = "", slug: str = "acme") -> Any:
    return Client().get(f"/status/{slug}{suffix}")


def texts() -> dict[str, str]:
    """Every cached route of the page, read now."""
    return {suffix: read(suffix).content.decode() for suffix in ROUTES}


def status_badge(page: Any) -> str:
    return str(Client().get(f"/badge/{page.badge_key}/status.json").json()["message"])


def warm(page: Any) -> None:
    """Read every route once, so that each is cached (and would be served stale)."""
    texts()
    status_badge(page)


def test_a_declared_incident_shows_at_once(api: Any, cast: Any, world: dict[str, Any]) -> None:
    warm(world["page"])
    assert status_badge(world["page"]) == "operational"
    unrelated_version = page_cache._version(world["unrelated"].pk)

    declared = api.as_user(cast.owner).post(
        INCIDENTS,
        {
            "title": "Payments-fail-7",
            "endpoints": [str(world["endpoint"].pk)],
            "impact": "major_outage",
            "message": "First-word-q1",
        },
        format="json",
    )

    assert declared.status_code == 201, declared.content
    for suffix, text in texts().items():
        assert "Payments-fail-7" in text, suffix
        assert "First-word-q1" in text, suffix
    summary = read("/summary.json").json()
    assert summary["status"]["indicator"] == "critical"
    assert [c["status"] for c in summary["components"]] == ["major_outage"]
    assert status_badge(world["page"]) == "major outage"
    # A page showing none of its endpoints keeps its cache.
    assert page_cache._version(world["unrelated"].pk) == unrelated_version


def test_an_update_and_the_resolution_show_at_once(
    api: Any, cast: Any, world: dict[str, Any]
) -> None:
    owner = api.as_user(cast.owner)
    created = owner.post(
        INCIDENTS,
        {
            "title": "Payments-fail-7",
            "endpoints": [str(world["endpoint"].pk)],
            "impact": "partial_outage",
            "message": "First-word-q1",
        },
        format="json",
    )
    incident = created.json()["id"]
    warm(world["page"])

    updated = owner.post(
        f"{INCIDENTS}/{incident}/updates",
        {"status": "identified", "message": "Second-word-q2"},
        format="json",
    )

    assert updated.status_code == 201, updated.content
    for suffix, text in texts().items():
        assert "Second-word-q2" in text, suffix
    assert read("/summary.json").json()["incidents"][0]["status"] == "identified"

    resolved = owner.post(
        f"{INCIDENTS}/{incident}/updates",
        {"status": "resolved", "message": "Third-word-q3"},
        format="json",
    )

    assert resolved.status_code == 201, resolved.content
    summary = read("/summary.json").json()
    assert summary["incidents"] == []
    assert summary["status"]["indicator"] == "none"
    assert status_badge(world["page"]) == "operational"
    assert "Third-word-q3" in read("/history.atom").content.decode()
    assert "Third-word-q3" in read("/history.rss").content.decode()


def test_an_update_on_an_automatic_incident_shows_at_once(
    api: Any, cast: Any, world: dict[str, Any]
) -> None:
    endpoint: Endpoint = world["endpoint"]
    Endpoint.objects.filter(pk=endpoint.pk).update(status=EndpointStatus.DOWN)
    incident = Incident.objects.create(endpoint=endpoint, started_at=timezone.now())
    warm(world["page"])

    posted = api.as_user(cast.owner).post(
        f"{INCIDENTS}/{incident.pk}/updates",
        {"status": "identified", "message": "Auto-word-q4"},
        format="json",
    )

    assert posted.status_code == 201, posted.content
    for suffix, text in texts().items():
        assert "Auto-word-q4" in text, suffix


def test_an_automatic_incident_kept_off_status_pages_leaves_them(
    api: Any, cast: Any, world: dict[str, Any]
) -> None:
    endpoint: Endpoint = world["endpoint"]
    Endpoint.objects.filter(pk=endpoint.pk).update(status=EndpointStatus.DOWN)
    incident = Incident.objects.create(
        endpoint=endpoint, started_at=timezone.now(), title="Hidden-soon-q5"
    )
    owner = api.as_user(cast.owner)
    owner.post(
        f"{INCIDENTS}/{incident.pk}/updates",
        {"status": "investigating", "message": "Hidden-word-q6"},
        format="json",
    )
    before = texts()
    for suffix, text in before.items():
        assert "Hidden-soon-q5" in text, suffix
        assert "Hidden-word-q6" in text, suffix

    hidden = owner.patch(f"{INCIDENTS}/{incident.pk}", {"public": False}, format="json")

    assert hidden.status_code == 200, hidden.content
    for suffix, text in texts().items():
        assert "Hidden-soon-q5" not in text, suffix
        assert "Hidden-word-q6" not in text, suffix
    summary = read("/summary.json").json()
    assert summary["incidents"] == []
    # The outage itself is measured, not said: the component still shows it.
    assert [c["status"] for c in summary["components"]] == ["major_outage"]
    assert summary["status"]["indicator"] != "none"
    assert status_badge(world["page"]) != "operational"


def test_an_automatic_incident_not_public_from_the_start_never_shows(
    cast: Any, world: dict[str, Any]
) -> None:
    endpoint: Endpoint = world["endpoint"]
    Endpoint.objects.filter(pk=endpoint.pk).update(status=EndpointStatus.DOWN)
    Incident.objects.create(
        endpoint=endpoint, started_at=timezone.now(), title="Never-shown-q7", public=False
    )

    for suffix, text in texts().items():
        assert "Never-shown-q7" not in text, suffix
        assert "is down" not in text, suffix  # nor under its default title
    summary = read("/summary.json").json()
    assert summary["incidents"] == []
    assert [c["status"] for c in summary["components"]] == ["major_outage"]
    assert 'class="component status-major_outage"' in read().content.decode()


def test_a_failing_cache_does_not_fail_the_update(
    api: Any,
    cast: Any,
    world: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("cache down")

    monkeypatch.setattr(page_cache, "local_forget", broken)
    created = api.as_user(cast.owner).post(
        INCIDENTS,
        {
            "title": "Still-written-q8",
            "endpoints": [str(world["endpoint"].pk)],
            "impact": "partial_outage",
        },
        format="json",
    )

    assert created.status_code == 201, created.content
    assert Incident.objects.filter(title="Still-written-q8").exists()
    said = [r for r in caplog.records if r.name == "statuspages.signals"]
    assert said
    assert all(r.levelname == "WARNING" and "not cleared" in r.getMessage() for r in said)
