"""Django admin for API keys and endpoints: no secrets on any page, and the actions work."""

import pytest
from django.urls import reverse

from apikeys.models import ApiKey
from monitoring.models import Endpoint

SECRET_TARGET = "postgresql://app:hunter2-secret@db.test:5432/app"
NUMS = ("TOTAL", "INITIAL", "MIN_NUM", "MAX_NUM")


@pytest.fixture
def records(cast, make_key, make_endpoint):
    key = make_key(cast.owner, "endpoint:read")
    endpoint = make_endpoint(
        cast.project,
        type="postgresql",
        target=SECRET_TARGET,
        config={"degraded_above_ms": 500},
    )
    http = make_endpoint(
        cast.project, config={"headers": {"Authorization": "Bearer header-secret-42"}}
    )
    return key, ApiKey.objects.get(), endpoint, http


def test_key_pages_never_show_the_key_or_its_digest(staff_client, records):
    key, record, _, _ = records

    pages = [
        staff_client.get(reverse("admin:apikeys_apikey_changelist")),
        staff_client.get(reverse("admin:apikeys_apikey_changelist"), {"q": "acme"}),
        staff_client.get(reverse("admin:apikeys_apikey_change", args=[record.pk])),
    ]

    for page in pages:
        assert page.status_code == 200
        text = page.content.decode()
        assert key[16:] not in text
        assert record.digest not in text
        assert record.prefix in text


def test_the_revoke_action_revokes(staff_client, records):
    _, record, _, _ = records

    staff_client.post(
        reverse("admin:apikeys_apikey_changelist"),
        {"action": "revoke", "_selected_action": [record.pk]},
    )

    assert ApiKey.objects.get().revoked_at is not None


def test_endpoint_pages_show_targets_masked(staff_client, records):
    _, _, endpoint, http = records

    pages = [
        staff_client.get(reverse("admin:monitoring_endpoint_changelist")),
        staff_client.get(reverse("admin:monitoring_endpoint_changelist"), {"q": "db.test"}),
        staff_client.get(reverse("admin:monitoring_endpoint_change", args=[endpoint.pk])),
        staff_client.get(reverse("admin:monitoring_endpoint_change", args=[http.pk])),
    ]

    for page in pages:
        assert page.status_code == 200
        text = page.content.decode()
        assert "hunter2-secret" not in text
        assert "header-secret-42" not in text
    assert "postgresql://app:****@db.test:5432/app" in pages[2].content.decode()


def test_editing_an_endpoint_keeps_its_secrets_and_rules(staff_client, records):
    _, _, endpoint, _ = records
    url = reverse("admin:monitoring_endpoint_change", args=[endpoint.pk])
    form = {
        "name": "Primary DB",
        "interval_seconds": 120,
        "timeout_seconds": 5,
        "failure_threshold": 3,
        "recovery_threshold": 1,
        "sla_target": "99.95",
        # The read-only inlines of its latest checks and incidents, as a browser posts them.
        **{f"{inline}-{n}_FORMS": "0" for inline in ("checks", "incidents") for n in NUMS},
    }
    # Not form fields: the clear target and config change only through validating services.
    smuggled = {
        "target": "postgresql://x:y@evil.test:5432/x",
        "config": '{"degraded_above_ms": 1}',
        "type": "redis",
        "enabled": "",
    }

    assert staff_client.post(url, {**form, **smuggled}).status_code == 302
    bad = staff_client.post(url, {**form, "timeout_seconds": 120})

    assert bad.status_code == 200  # the form again, with the error
    saved = Endpoint.objects.get(pk=endpoint.pk)
    assert (saved.name, saved.interval_seconds, saved.timeout_seconds) == ("Primary DB", 120, 5)
    assert saved.sla_target == 99.95
    assert (saved.target, saved.type, saved.enabled) == (SECRET_TARGET, "postgresql", True)
    assert saved.target_masked == "postgresql://app:****@db.test:5432/app"
    assert saved.config["degraded_above_ms"] == 500


def test_pause_and_resume_actions(staff_client, records):
    _, _, endpoint, _ = records
    url = reverse("admin:monitoring_endpoint_changelist")

    staff_client.post(url, {"action": "pause", "_selected_action": [endpoint.pk]})
    assert Endpoint.objects.get(pk=endpoint.pk).status == "paused"

    staff_client.post(url, {"action": "resume", "_selected_action": [endpoint.pk]})
    resumed = Endpoint.objects.get(pk=endpoint.pk)
    assert (resumed.enabled, resumed.status) == (True, "pending")
    assert resumed.next_check_at is not None
