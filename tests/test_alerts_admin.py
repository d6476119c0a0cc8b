"""Django admin of channels, deliveries and maintenance windows: pages open, secrets are
never shown (nor even decrypted), attempts are listed under their delivery, and scopes stay
inside the organization."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from alerts.models import (
    Delivery,
    DeliveryAttempt,
    MaintenanceWindow,
    NotificationChannel,
)
from alerts.services import channel_create, maintenance_window_save
from tests.helpers import admin_url
from tests.web.conftest import Markup, visible_text

SLACK_URL = "https://hooks.slack.com/services/T000/B000/SECRETPART"
HOOK_URL = "https://hooks.example.com/in/HOOKPATH?token=HOOKTOKEN"
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def alerts(cast, make_endpoint):
    """A Slack and a webhook channel, a failed delivery with two attempts, a window."""
    site = make_endpoint(cast.project, target="https://user:target-pw-1@example.com/health")
    slack = channel_create(
        organization=cast.org,
        name="Ops Slack",
        kind="slack",
        config={"url": SLACK_URL},
        projects=[cast.project],
    )
    hook = channel_create(
        organization=cast.org,
        name="Ops hook",
        kind="webhook",
        config={"url": HOOK_URL},
        endpoints=[site],
    )
    delivery = Delivery.objects.create(
        channel=slack,
        event="incident.opened",
        event_id=uuid.uuid4(),
        occurred_at=T0,
        status="failed",
        attempts=2,
        last_error="HTTP 503",
    )
    for n, (code, error) in enumerate([(None, "connection failed: refused"), (503, "HTTP 503")]):
        DeliveryAttempt.objects.create(
            delivery=delivery,
            attempted_at=T0 + timedelta(seconds=30 * n),
            ok=False,
            status_code=code,
            error=error,
            duration_ms=41.5 + n,
        )
    window = maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Upgrade",
        starts_at=T0,
        ends_at=T0 + timedelta(hours=1),
        recurrence="weekly",
        projects=[cast.project],
        endpoints=[site],
    )
    return {"slack": slack, "hook": hook, "delivery": delivery, "window": window, "site": site}


def secrets(alerts):
    return ["SECRETPART", "T000", "HOOKPATH", "HOOKTOKEN", "target-pw-1", alerts["hook"].secret]


def pages_of(alerts):
    attempt = DeliveryAttempt.objects.first()
    return [
        admin_url(NotificationChannel, "changelist"),
        admin_url(NotificationChannel, "changelist") + "?failing=yes",
        admin_url(NotificationChannel, "changelist") + "?q=Ops",
        admin_url(NotificationChannel, "change", alerts["slack"].pk),
        admin_url(NotificationChannel, "change", alerts["hook"].pk),
        admin_url(NotificationChannel, "history", alerts["hook"].pk),
        admin_url(NotificationChannel, "delete", alerts["slack"].pk),
        admin_url(Delivery, "changelist"),
        admin_url(Delivery, "changelist") + "?status__exact=failed",
        admin_url(Delivery, "change", alerts["delivery"].pk),
        admin_url(DeliveryAttempt, "changelist"),
        admin_url(DeliveryAttempt, "change", attempt.pk),
        admin_url(MaintenanceWindow, "changelist"),
        admin_url(MaintenanceWindow, "change", alerts["window"].pk),
        admin_url(MaintenanceWindow, "add"),
    ]


def test_every_alerts_page_opens_and_shows_no_secret(staff_client, alerts):
    assert alerts["hook"].secret
    for url in pages_of(alerts):
        response = staff_client.get(url)
        assert response.status_code == 200, url
        source = response.content.decode()
        assert [s for s in secrets(alerts) if s in source] == [], url


def test_no_alerts_page_decrypts_anything(staff_client, alerts, monkeypatch):
    decrypted = []
    monkeypatch.setattr("healthmon.encryption.decrypt", lambda token: decrypted.append(token))
    # Except a channel's delete confirmation: Django's collector loads the deliveries with
    # their channel (select_related) to name them. Nothing of it is shown (tested above).
    urls = [url for url in pages_of(alerts) if not url.endswith("/delete/")]

    for url in urls:
        assert staff_client.get(url).status_code == 200, url

    assert decrypted == []


def test_the_channel_list_shows_masked_destinations_and_the_failing_flag(staff_client, alerts):
    NotificationChannel.objects.filter(pk=alerts["slack"].pk).update(
        failing_since=timezone.now(), consecutive_failures=4
    )

    listed = staff_client.get(admin_url(NotificationChannel, "changelist"))
    failing = staff_client.get(admin_url(NotificationChannel, "changelist") + "?failing=yes")
    page = staff_client.get(admin_url(NotificationChannel, "change", alerts["slack"].pk))

    assert "Ops Slack" in visible_text(listed)
    assert "Ops hook" in visible_text(listed)
    assert "Ops hook" not in visible_text(failing)
    assert "https://hooks.slack.com/****" in visible_text(page)


def test_the_secret_and_config_are_no_form_fields_and_channels_are_not_added_here(
    staff_client, alerts
):
    page = staff_client.get(admin_url(NotificationChannel, "change", alerts["hook"].pk))
    markup = Markup(page.content.decode())

    names = {attrs.get("name") for tag, attrs in markup.tags if tag in ("input", "textarea")}
    assert not names & {"secret", "config", "config_masked", "kind", "organization"}
    assert staff_client.get(admin_url(NotificationChannel, "add")).status_code == 403


def channel_form(alerts, **changes):
    channel = alerts["slack"]
    form = {
        "name": channel.name,
        "enabled": "on",
        "projects": [str(p.pk) for p in channel.projects.all()],
        "endpoints": "",
    }
    form.update(changes)
    return {k: v for k, v in form.items() if v is not None}


def test_saving_a_channel_keeps_its_destination_and_reenabling_clears_the_flag(
    staff_client, alerts
):
    slack = alerts["slack"]
    NotificationChannel.objects.filter(pk=slack.pk).update(
        enabled=False, failing_since=timezone.now(), consecutive_failures=4
    )
    url = admin_url(NotificationChannel, "change", slack.pk)

    response = staff_client.post(
        url, channel_form(alerts, name="Renamed", endpoints=str(alerts["site"].pk))
    )

    assert response.status_code == 302
    saved = NotificationChannel.objects.get(pk=slack.pk)
    assert (saved.name, saved.enabled, saved.failing_since) == ("Renamed", True, None)
    assert saved.consecutive_failures == 0
    assert saved.config == {"url": SLACK_URL}
    assert saved.config_masked == {"url": "https://hooks.slack.com/****"}
    assert list(saved.endpoints.all()) == [alerts["site"]]


def test_a_channel_cannot_reach_into_another_organization(
    staff_client, cast, alerts, make_endpoint
):
    url = admin_url(NotificationChannel, "change", alerts["slack"].pk)
    foreign_site = make_endpoint(cast.other_project, name="Globex site")

    by_project = staff_client.post(url, channel_form(alerts, projects=[str(cast.other_project.pk)]))
    by_endpoint = staff_client.post(url, channel_form(alerts, endpoints=str(foreign_site.pk)))

    for response in (by_project, by_endpoint):
        assert response.status_code == 200
        assert "Only projects and endpoints of the same organization." in visible_text(response)
    saved = NotificationChannel.objects.get(pk=alerts["slack"].pk)
    assert list(saved.projects.all()) == [cast.project]
    assert list(saved.endpoints.all()) == []


def test_the_delivery_page_lists_each_attempt(staff_client, alerts):
    response = staff_client.get(admin_url(Delivery, "change", alerts["delivery"].pk))
    listed = staff_client.get(admin_url(Delivery, "changelist"))

    text = visible_text(response)
    assert "connection failed: refused" in text
    assert "503" in text
    assert "41.5" in text
    assert "42.5" in text
    assert "Ops Slack" in visible_text(listed)
    assert "HTTP 503" in visible_text(listed)


def test_deliveries_and_attempts_are_read_only(staff_client, alerts):
    delivery = alerts["delivery"]
    before = Delivery.objects.values().get(pk=delivery.pk)

    response = staff_client.post(
        admin_url(Delivery, "change", delivery.pk), {"status": "delivered"}
    )

    assert response.status_code == 403
    assert Delivery.objects.values().get(pk=delivery.pk) == before
    assert staff_client.get(admin_url(Delivery, "add")).status_code == 403
    assert staff_client.get(admin_url(DeliveryAttempt, "add")).status_code == 403


def window_form(cast, **changes):
    form = {
        "organization": str(cast.org.pk),
        "name": "Planned",
        "starts_at_0": "2030-02-01",
        "starts_at_1": "10:00:00",
        "ends_at_0": "2030-02-01",
        "ends_at_1": "11:00:00",
        "recurrence": "",
        "projects": [str(cast.project.pk)],
        "endpoints": "",
    }
    form.update(changes)
    return form


def test_a_window_is_added_and_checked_in_the_admin(staff_client, cast):
    url = admin_url(MaintenanceWindow, "add")

    backwards = staff_client.post(url, window_form(cast, ends_at_1="09:00:00"))
    foreign = staff_client.post(url, window_form(cast, projects=[str(cast.other_project.pk)]))
    added = staff_client.post(url, window_form(cast))

    assert backwards.status_code == foreign.status_code == 200
    assert "Must be after starts_at." in visible_text(backwards)
    assert "Only projects and endpoints of the same organization." in visible_text(foreign)
    assert added.status_code == 302
    window = MaintenanceWindow.objects.get()
    assert (window.name, window.organization, list(window.projects.all())) == (
        "Planned",
        cast.org,
        [cast.project],
    )
    assert window.starts_at == datetime(2030, 2, 1, 10, tzinfo=UTC)


def test_a_window_keeps_its_organization(staff_client, cast, alerts):
    window = alerts["window"]
    url = admin_url(MaintenanceWindow, "change", window.pk)

    response = staff_client.post(
        url,
        window_form(
            cast,
            organization=str(cast.other_org.pk),
            recurrence="weekly",
            endpoints=str(alerts["site"].pk),
        ),
    )

    assert response.status_code == 302
    window.refresh_from_db()
    assert window.organization == cast.org
    assert window.name == "Planned"
    assert list(window.endpoints.all()) == [alerts["site"]]
