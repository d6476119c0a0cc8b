"""Channels and maintenance windows in the audit log: created and deleted through the API,
the page or the admin, with who did it and nothing secret."""

from datetime import UTC, datetime

import pytest

from accounts.models import AuditEvent
from alerts import services
from alerts.models import MaintenanceWindow, NotificationChannel

pytestmark = pytest.mark.django_db
SLACK = "https://hooks.slack.com/services/T000/B000/SECRETPART"
WINDOW = {"starts_at": "2026-12-01T02:00:00Z", "ends_at": "2026-12-01T03:00:00Z"}


def events(action):
    return list(AuditEvent.objects.filter(action=action).values_list("actor_id", "target_id"))


def test_the_api_records_who_created_and_deleted_a_channel_and_a_window(api, cast):
    api.as_user(cast.admin)
    body = {"name": "Chat", "kind": "slack", "config": {"url": SLACK}}
    channel = api.post("/api/v1/notification-channels", body, format="json").json()["id"]
    window = api.post("/api/v1/maintenance-windows", WINDOW, format="json").json()["id"]
    api.as_user(cast.owner)
    assert api.delete(f"/api/v1/notification-channels/{channel}").status_code == 204
    assert api.delete(f"/api/v1/maintenance-windows/{window}").status_code == 204

    assert events("channel.created") == [(cast.admin.pk, channel)]
    assert events("maintenance.created") == [(cast.admin.pk, window)]
    assert events("channel.deleted") == [(cast.owner.pk, channel)]
    assert events("maintenance.deleted") == [(cast.owner.pk, window)]
    deleted = AuditEvent.objects.get(action="maintenance.deleted")
    assert deleted.details["starts_at"] == "2026-12-01T02:00:00+00:00"
    log = api.get("/api/v1/audit-log").content.decode()
    assert "SECRETPART" not in log
    assert "T000" not in log


def test_changing_a_window_is_not_recorded_as_a_creation(api, cast):
    api.as_user(cast.admin)
    window = api.post("/api/v1/maintenance-windows", WINDOW, format="json").json()["id"]
    answer = api.patch(f"/api/v1/maintenance-windows/{window}", {"name": "x"}, format="json")

    assert answer.status_code == 200
    assert len(events("maintenance.created")) == 1
    assert events("maintenance.updated") == [(cast.admin.pk, window)]


def test_a_channel_changed_is_recorded_with_the_fields_not_their_values(api, cast):
    api.as_user(cast.admin)
    body = {"name": "Chat", "kind": "slack", "config": {"url": SLACK}}
    channel = api.post("/api/v1/notification-channels", body, format="json").json()["id"]
    other = "https://hooks.slack.com/services/T111/B111/OTHERSECRET"
    change = {"config": {"url": other}, "enabled": False}
    answer = api.patch(f"/api/v1/notification-channels/{channel}", change, format="json")

    assert answer.status_code == 200
    event = AuditEvent.objects.get(action="channel.updated")
    assert (event.actor_id, event.target_id) == (cast.admin.pk, channel)
    assert event.details == {"fields": ["config", "enabled"]}
    log = api.get("/api/v1/audit-log").content.decode()
    assert "OTHERSECRET" not in log
    assert "T111" not in log


def test_the_page_and_the_admin_record_deletions(client, cast, make_user):
    channel = services.channel_create(
        organization=cast.org, name="Chat", kind="slack", config={"url": SLACK}
    )
    other = services.channel_create(
        organization=cast.org, name="Chat 2", kind="slack", config={"url": SLACK}
    )
    window = services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=datetime(2026, 12, 1, 2, tzinfo=UTC),
        ends_at=datetime(2026, 12, 1, 3, tzinfo=UTC),
    )
    client.force_login(cast.owner)
    assert client.post(f"/alerts/channels/{channel.pk}/delete").status_code == 302

    root = make_user(cast.org, "root@acme.test", "owner")
    root.is_staff = root.is_superuser = True
    root.save()
    client.force_login(root)
    answer = client.post(
        "/admin/alerts/notificationchannel/",
        {"action": "delete_selected", "_selected_action": [other.pk], "post": "yes"},
    )
    assert answer.status_code == 302
    answer = client.post(f"/admin/alerts/maintenancewindow/{window.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302

    assert not NotificationChannel.objects.exists()
    assert set(events("channel.deleted")) == {
        (cast.owner.pk, str(channel.pk)),
        (root.pk, str(other.pk)),
    }
    assert events("maintenance.deleted") == [(root.pk, str(window.pk))]
