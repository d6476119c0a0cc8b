"""Notification channels over the API: CRUD, masked configs and a secret shown once, who
reads and writes what, the network policy on URLs, the test send and the deliveries."""

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Project
from alerts.delivery import SIGNATURE_HEADER, signature
from alerts.models import Delivery, DeliveryAttempt, NotificationChannel
from alerts.services import channel_create
from monitoring.models import Incident
from tests.helpers import assert_problem, queries_of_get

URL = "/api/v1/notification-channels"
FIELDS = {
    "id",
    "name",
    "kind",
    "config",
    "projects",
    "endpoints",
    "enabled",
    "events",
    "created_at",
    "failing",
    "failing_since",
    "consecutive_failures",
    "updated_at",
}
DELIVERY_FIELDS = {
    "id",
    "event",
    "event_id",
    "incident",
    "occurred_at",
    "status",
    "attempts",
    "next_attempt_at",
    "last_error",
    "created_at",
    "delivered_at",
    "tries",
}
SLACK_PATH = "services/T0001/B0002/Zx9SeCrEtToKeN"
SLACK_URL = f"https://hooks.slack.com/{SLACK_PATH}"
EMAIL = {"name": "On-call", "kind": "email", "config": {"addresses": ["Ops@Example.com"]}}
WEBHOOK = {"name": "Hook", "kind": "webhook", "config": {"url": "https://hooks.example.com/in"}}
SLACK = {"name": "Slack", "kind": "slack", "config": {"url": SLACK_URL}}


def make_channel(cast, **fields: Any) -> NotificationChannel:
    """A channel of the cast's organization, written by the service (no URL check)."""
    fields.setdefault("name", "Ops")
    fields.setdefault("kind", "email")
    fields.setdefault("config", {"addresses": ["ops@acme.test"], "to_members": False})
    return channel_create(organization=cast.org, **fields)


@pytest.fixture
def strict_policy(settings) -> None:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []


# --- Create, read, change, delete -------------------------------------------------------------


def test_create_an_email_channel(api, cast):
    response = api.as_user(cast.owner).post(URL, EMAIL)

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == FIELDS  # no secret: only webhooks have one
    assert data["config"] == {"addresses": ["ops@example.com"], "to_members": False}
    assert (data["projects"], data["endpoints"], data["enabled"]) == ([], [], True)
    assert (data["failing"], data["failing_since"], data["consecutive_failures"]) == (
        False,
        None,
        0,
    )
    channel = NotificationChannel.objects.get()
    assert channel.organization == cast.org
    assert channel.secret == ""


def test_the_webhook_secret_is_answered_once_on_create_and_never_again(api, cast):
    api.as_user(cast.owner)

    created = api.post(URL, WEBHOOK)

    assert created.status_code == 201
    secret = created.json()["secret"]
    assert secret == NotificationChannel.objects.get().secret
    assert len(secret) >= 32
    pk = created.json()["id"]
    later = [
        api.get(URL),
        api.get(f"{URL}/{pk}"),
        api.patch(f"{URL}/{pk}", {"name": "Renamed"}),
        api.get(f"{URL}/{pk}/deliveries"),
    ]
    for response in later:
        assert response.status_code == 200
        assert secret not in response.content.decode()
        assert b'"secret"' not in response.content


@pytest.mark.parametrize("body", [EMAIL, SLACK])
def test_other_kinds_get_no_secret(api, cast, body):
    response = api.as_user(cast.owner).post(URL, body)

    assert response.status_code == 201
    assert "secret" not in response.json()


def test_a_chat_webhook_url_is_masked_in_every_answer(api, cast):
    api.as_user(cast.owner)

    created = api.post(URL, SLACK)
    pk = created.json()["id"]
    answers = [
        created,
        api.get(URL),
        api.get(f"{URL}/{pk}"),
        api.patch(
            f"{URL}/{pk}", {"name": "Chat", "config": {"url": "https://hooks.slack.com/****"}}
        ),
    ]

    for response in answers:
        assert response.status_code in (200, 201), response.content
        assert SLACK_PATH not in response.content.decode()
        assert "Zx9SeCrEtToKeN" not in response.content.decode()
    assert created.json()["config"] == {"url": "https://hooks.slack.com/****"}
    assert NotificationChannel.objects.get().config == {"url": SLACK_URL}


def test_patching_back_the_masked_config_keeps_the_stored_url(api, cast):
    api.as_user(cast.owner)
    pk = api.post(URL, SLACK).json()["id"]
    read = api.get(f"{URL}/{pk}").json()

    response = api.patch(
        f"{URL}/{pk}", {"name": "Renamed", "kind": "slack", "config": read["config"]}
    )

    assert response.status_code == 200, response.content
    assert response.json()["config"] == read["config"]
    channel = NotificationChannel.objects.get(pk=pk)
    assert channel.config["url"] == SLACK_URL
    assert channel.name == "Renamed"


def test_a_url_whose_credentials_are_masked_keeps_them_when_sent_back(api, cast):
    api.as_user(cast.owner)
    url = "https://bot:t0ken@hooks.example.com/"
    created = api.post(URL, {**WEBHOOK, "config": {"url": url}}).json()
    assert created["config"] == {"url": "https://hooks.example.com"}

    response = api.patch(f"{URL}/{created['id']}", {"config": created["config"]})

    assert response.status_code == 200
    assert "t0ken" not in response.content.decode()
    assert NotificationChannel.objects.get().config == {"url": url}


def test_turning_a_failing_channel_on_again_clears_the_flag(api, cast):
    channel = make_channel(cast, enabled=False)
    NotificationChannel.objects.filter(pk=channel.pk).update(
        failing_since=timezone.now(), consecutive_failures=3
    )
    api.as_user(cast.owner)
    assert api.get(f"{URL}/{channel.id}").json()["failing"] is True

    data = api.patch(f"{URL}/{channel.id}", {"enabled": True}).json()

    assert (data["failing"], data["failing_since"], data["consecutive_failures"]) == (
        False,
        None,
        0,
    )


def test_a_new_url_replaces_the_stored_one(api, cast):
    api.as_user(cast.owner)
    pk = api.post(URL, SLACK).json()["id"]

    response = api.patch(f"{URL}/{pk}", {"config": {"url": "https://hooks.slack.com/services/new"}})

    assert response.status_code == 200
    channel = NotificationChannel.objects.get(pk=pk)
    assert channel.config == {"url": "https://hooks.slack.com/services/new"}
    assert channel.config_masked == {"url": "https://hooks.slack.com/****"}


@pytest.mark.parametrize(
    "url", ["https://hooks.slack.com/****/more", "https://other.example.com/****"]
)
def test_a_masked_url_that_is_not_the_one_answered_is_refused(api, cast, url):
    api.as_user(cast.owner)
    pk = api.post(URL, SLACK).json()["id"]

    problem = assert_problem(
        api.patch(f"{URL}/{pk}", {"config": {"url": url}}), 400, "validation_error"
    )

    assert "config.url" in problem["errors"]
    assert NotificationChannel.objects.get(pk=pk).config == {"url": SLACK_URL}


def test_the_kind_cannot_change(api, cast):
    api.as_user(cast.owner)
    pk = api.post(URL, EMAIL).json()["id"]

    problem = assert_problem(
        api.patch(f"{URL}/{pk}", {"kind": "webhook", "config": {"url": "https://x.example.com/"}}),
        400,
        "validation_error",
    )

    assert "kind" in problem["errors"]
    assert NotificationChannel.objects.get(pk=pk).kind == "email"


def test_patch_changes_only_what_is_sent(api, cast, make_endpoint):
    api.as_user(cast.owner)
    endpoint = make_endpoint(cast.project)
    pk = api.post(URL, {**EMAIL, "projects": [str(cast.project.id)]}).json()["id"]

    data = api.patch(f"{URL}/{pk}", {"enabled": False, "endpoints": [str(endpoint.id)]}).json()

    assert data["enabled"] is False
    assert data["projects"] == [str(cast.project.id)]
    assert data["endpoints"] == [str(endpoint.id)]
    assert data["config"] == {"addresses": ["ops@example.com"], "to_members": False}
    data = api.patch(f"{URL}/{pk}", {"projects": []}).json()
    assert (data["projects"], data["endpoints"]) == ([], [str(endpoint.id)])


def test_list_and_detail(api, cast):
    first = make_channel(cast, name="First")
    make_channel(cast, name="Second", kind="webhook", config={"url": "https://a.example.com/x"})

    page = api.as_user(cast.admin).get(URL).json()

    assert page["count"] == 2
    assert [c["name"] for c in page["results"]] == ["First", "Second"]
    assert all(set(c) == FIELDS for c in page["results"])
    assert page["results"][1]["config"] == {"url": "https://a.example.com/****"}
    assert api.get(f"{URL}/{first.id}").json()["name"] == "First"


def test_delete(api, cast):
    channel = make_channel(cast)

    response = api.as_user(cast.admin).delete(f"{URL}/{channel.id}")

    assert response.status_code == 204
    assert not NotificationChannel.objects.exists()


def test_the_list_reads_a_page_in_a_fixed_number_of_queries(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    make_channel(cast, projects=[cast.project], endpoints=[endpoint])
    one = queries_of_get(api, URL)
    for n in range(5):
        make_channel(cast, name=f"C{n}", projects=[cast.project], endpoints=[endpoint])

    assert queries_of_get(api, URL) == one
    assert one <= 6


def test_the_list_does_not_decrypt_configs(api, cast, monkeypatch):
    make_channel(cast, kind="webhook", config={"url": "https://a.example.com/x"})

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decrypted")

    monkeypatch.setattr("healthmon.encryption.EncryptedJSONField.from_db_value", refuse)
    monkeypatch.setattr("healthmon.encryption.EncryptedTextField.from_db_value", refuse)

    assert api.as_user(cast.owner).get(URL).status_code == 200


# --- Credentials, roles and scopes ------------------------------------------------------------


def test_no_credential_is_a_401(api, cast):
    channel = make_channel(cast)
    for method, path in [
        ("get", URL),
        ("post", URL),
        ("get", f"{URL}/{channel.id}"),
        ("patch", f"{URL}/{channel.id}"),
        ("delete", f"{URL}/{channel.id}"),
        ("post", f"{URL}/{channel.id}/test"),
        ("get", f"{URL}/{channel.id}/deliveries"),
    ]:
        assert_problem(getattr(api, method)(path, {}), 401, "not_authenticated")
    assert NotificationChannel.objects.count() == 1


def test_members_cannot_write(api, cast):
    channel = make_channel(cast)
    api.as_user(cast.member)

    for response in [
        api.post(URL, EMAIL),
        api.patch(f"{URL}/{channel.id}", {"name": "Mine"}),
        api.delete(f"{URL}/{channel.id}"),
        api.post(f"{URL}/{channel.id}/test"),
    ]:
        assert_problem(response, 403, "permission_denied")
    assert list(NotificationChannel.objects.values_list("name", flat=True)) == ["Ops"]
    assert not Delivery.objects.exists()


def test_members_read_the_channels_for_the_organization_or_their_projects(api, cast):
    hidden = Project.objects.create(organization=cast.org, name="Payments")
    whole = make_channel(cast, name="Whole")
    mine = make_channel(cast, name="Mine", projects=[cast.project])
    theirs = make_channel(cast, name="Theirs", projects=[hidden])
    api.as_user(cast.member)

    names = [c["name"] for c in api.get(URL).json()["results"]]

    assert names == ["Whole", "Mine"]
    assert api.get(f"{URL}/{whole.id}").status_code == 200
    assert api.get(f"{URL}/{mine.id}/deliveries").status_code == 200
    missing = api.get(f"{URL}/{uuid.uuid4()}")
    for path in (f"{URL}/{theirs.id}", f"{URL}/{theirs.id}/deliveries"):
        response = api.get(path)
        assert_problem(response, 404, "not_found")
        assert response.content == missing.content
    assert len(api.as_user(cast.owner).get(URL).json()["results"]) == 3


@pytest.mark.parametrize("scope", ["endpoint:read", "endpoint:create", "incident:read"])
def test_keys_need_the_admin_scope_to_read_or_write(api, cast, make_key, scope):
    channel = make_channel(cast)
    api.with_key(make_key(cast.owner, scope))

    for response in [
        api.get(URL),
        api.get(f"{URL}/{channel.id}"),
        api.get(f"{URL}/{channel.id}/deliveries"),
        api.post(URL, EMAIL),
        api.patch(f"{URL}/{channel.id}", {"name": "Keyed"}),
        api.post(f"{URL}/{channel.id}/test"),
        api.delete(f"{URL}/{channel.id}"),
    ]:
        assert_problem(response, 403, "insufficient_scope")
    assert list(NotificationChannel.objects.values_list("name", flat=True)) == ["Ops"]


def test_an_admin_key_reads_and_writes(api, cast, make_key):
    api.with_key(make_key(cast.owner, "admin"))

    created = api.post(URL, EMAIL)
    pk = created.json()["id"]

    assert created.status_code == 201
    assert api.get(URL).status_code == 200
    assert api.patch(f"{URL}/{pk}", {"name": "Keyed"}).status_code == 200
    assert api.delete(f"{URL}/{pk}").status_code == 204


def test_another_organizations_channel_is_a_404_and_stays_as_it_is(api, cast):
    channel = make_channel(cast)
    before = list(NotificationChannel.objects.values())
    api.as_user(cast.outsider)

    for method, suffix, body in [
        ("get", "", None),
        ("patch", "", {"name": "Taken"}),
        ("delete", "", None),
        ("post", "/test", None),
        ("get", "/deliveries", None),
    ]:
        foreign = getattr(api, method)(f"{URL}/{channel.id}{suffix}", body)
        random_id = uuid.uuid4()
        missing = getattr(api, method)(f"{URL}/{random_id}{suffix}", body)
        assert_problem(foreign, 404, "not_found")
        assert foreign.content == missing.content
    assert api.get(URL).json()["count"] == 0
    assert list(NotificationChannel.objects.values()) == before
    assert not Delivery.objects.exists()


@pytest.mark.parametrize("field", ["projects", "endpoints"])
def test_ids_the_caller_cannot_see_are_a_400_and_nothing_is_created(
    api, cast, make_endpoint, field
):
    foreign = {
        "projects": cast.other_project.id,
        "endpoints": make_endpoint(cast.other_project).id,
    }[field]
    api.as_user(cast.owner)

    problem = assert_problem(
        api.post(URL, {**EMAIL, field: [str(foreign)]}), 400, "validation_error"
    )

    assert field in problem["errors"]
    assert not NotificationChannel.objects.exists()


def test_a_foreign_id_in_a_patch_is_a_400_and_nothing_changes(api, cast):
    channel = make_channel(cast, projects=[cast.project])

    response = api.as_user(cast.owner).patch(
        f"{URL}/{channel.id}", {"projects": [str(cast.other_project.id)]}
    )

    assert "projects" in assert_problem(response, 400, "validation_error")["errors"]
    assert list(channel.projects.all()) == [cast.project]


# --- Validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**EMAIL, "config": {}}, "config.addresses"),
        ({**EMAIL, "config": {"addresses": [], "to_members": False}}, "config.addresses"),
        ({**EMAIL, "config": {"addresses": ["not-an-address"]}}, "config.addresses"),
        (
            {**EMAIL, "config": {"addresses": [f"u{n}@a.test" for n in range(21)]}},
            "config.addresses",
        ),
        ({**EMAIL, "config": {"addresses": ["a@a.test"], "cc": "b@a.test"}}, "config.cc"),
        ({**EMAIL, "config": {"to_members": "yes"}}, "config.to_members"),
        ({**EMAIL, "config": {"url": "https://x.example.com/"}}, "config.url"),
        ({**EMAIL, "config": ["a@a.test"]}, "config"),
        ({**EMAIL, "config": None}, "config"),
        ({k: v for k, v in EMAIL.items() if k != "config"}, "config"),
        ({**WEBHOOK, "config": {}}, "config.url"),
        ({**WEBHOOK, "config": {"url": "ftp://x.example.com/"}}, "config.url"),
        ({**WEBHOOK, "config": {"url": "x.example.com/hook"}}, "config.url"),
        ({**WEBHOOK, "config": {"url": "https://x.example.com/a b"}}, "config.url"),
        ({**WEBHOOK, "config": {"url": "https://x.example.com/****"}}, "config.url"),
        ({**WEBHOOK, "config": {"url": 5}}, "config.url"),
        ({**WEBHOOK, "config": {"url": "https://x.example.com/", "secret": "s"}}, "config.secret"),
        ({**WEBHOOK, "kind": "pager"}, "kind"),
        ({**WEBHOOK, "name": "  "}, "name"),
        ({**WEBHOOK, "name": "x" * 201}, "name"),
        ({**WEBHOOK, "enabled": "no"}, "enabled"),
        ({**WEBHOOK, "projects": "all"}, "projects"),
        ({**WEBHOOK, "endpoints": ["not-a-uuid"]}, "endpoints"),
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(api, cast, body, field):
    response = api.as_user(cast.owner).post(URL, body)

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert any(key == field or key.startswith(f"{field}.") for key in errors), errors
    assert not NotificationChannel.objects.exists()


def test_addresses_are_normalized_and_deduplicated(api, cast):
    config = {"addresses": ["A@Example.com", "a@example.com", "b@example.com"], "to_members": True}

    data = api.as_user(cast.owner).post(URL, {**EMAIL, "config": config}).json()

    assert data["config"] == {"addresses": ["a@example.com", "b@example.com"], "to_members": True}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://0x7f000001/",
        "http://127.000.000.001/",
        "http://[::ffff:7f00:1]/",
        "http://[fe80::1%25eth0]/",
        "http://0/",
        "http://169.254.169.254/latest",
        "http://localhost/",
        "http://api.localhost./",
    ],
)
@pytest.mark.parametrize("kind", ["webhook", "slack"])
def test_private_addresses_are_refused_by_the_network_policy(api, cast, strict_policy, url, kind):
    response = api.as_user(cast.owner).post(
        URL, {"name": "In", "kind": kind, "config": {"url": url}}
    )

    problem = assert_problem(response, 400, "validation_error")
    assert "network policy" in problem["errors"]["config.url"][0]
    assert not NotificationChannel.objects.exists()


def test_a_patch_to_a_private_address_is_refused(api, cast, strict_policy):
    channel = make_channel(cast, kind="webhook", config={"url": "https://a.example.com/x"})

    response = api.as_user(cast.owner).patch(
        f"{URL}/{channel.id}", {"config": {"url": "http://10.1.2.3/"}}
    )

    assert "config.url" in assert_problem(response, 400, "validation_error")["errors"]
    assert NotificationChannel.objects.get().config == {"url": "https://a.example.com/x"}


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/x", "http://[::1]/", "http://2130706433/", "http://localhost/"]
)
def test_private_addresses_are_accepted_when_the_policy_allows_them(api, cast, settings, url):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True

    response = api.as_user(cast.owner).post(URL, {**WEBHOOK, "config": {"url": url}})

    assert response.status_code == 201, response.content


def test_allowed_networks_let_their_addresses_through(api, cast, strict_policy, settings):
    settings.PROBE_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    api.as_user(cast.owner)

    assert api.post(URL, {**WEBHOOK, "config": {"url": "http://10.0.0.1/"}}).status_code == 201
    refused = api.post(URL, {**WEBHOOK, "config": {"url": "http://192.168.1.1/"}})
    assert "config.url" in assert_problem(refused, 400, "validation_error")["errors"]


def test_host_names_are_not_resolved_when_saved(api, cast, strict_policy, monkeypatch):
    def no_dns(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("resolved")

    monkeypatch.setattr("socket.getaddrinfo", no_dns)

    response = api.as_user(cast.owner).post(URL, WEBHOOK)

    assert response.status_code == 201


# --- The test send and the deliveries ---------------------------------------------------------


def test_a_test_send_reaches_the_webhook_signed(api, cast, receiver):
    api.as_user(cast.owner)
    created = api.post(URL, {**WEBHOOK, "config": {"url": receiver.url}}).json()

    response = api.post(f"{URL}/{created['id']}/test")

    assert response.status_code == 200, response.content
    delivery = response.json()
    assert set(delivery) == DELIVERY_FIELDS
    assert (delivery["event"], delivery["status"], delivery["attempts"]) == ("test", "delivered", 1)
    assert delivery["delivered_at"] is not None
    assert delivery["incident"] is None
    [attempt] = delivery["tries"]
    assert (attempt["ok"], attempt["status_code"], attempt["error"]) == (True, 200, "")
    [request] = receiver.requests
    assert json.loads(request.body)["event"] == "test"
    assert json.loads(request.body)["id"] == delivery["event_id"]
    assert request.headers[SIGNATURE_HEADER.lower()] == signature(created["secret"], request.body)
    assert "SECRET-PATH" not in response.content.decode() + str(created)


def test_a_receiver_that_fails_makes_a_failed_delivery(api, cast, receiver):
    receiver.statuses = [500]
    api.as_user(cast.owner)
    pk = api.post(URL, {**WEBHOOK, "config": {"url": receiver.url}}).json()["id"]

    delivery = api.post(f"{URL}/{pk}/test").json()

    assert delivery["status"] == "failed"
    assert delivery["last_error"] == "HTTP 500"
    assert delivery["tries"][0]["status_code"] == 500
    assert delivery["tries"][0]["ok"] is False
    assert len(receiver.requests) == 1


def test_a_test_send_by_mail(api, cast, outbox):
    channel = make_channel(cast)

    delivery = api.as_user(cast.admin).post(f"{URL}/{channel.id}/test").json()

    assert delivery["status"] == "delivered"
    assert [message.to for message in outbox] == [["ops@acme.test"]]


def test_a_second_test_within_5_seconds_is_a_429(api, cast, receiver):
    api.as_user(cast.owner)
    pk = api.post(URL, {**WEBHOOK, "config": {"url": receiver.url}}).json()["id"]
    assert api.post(f"{URL}/{pk}/test").status_code == 200

    response = api.post(f"{URL}/{pk}/test")

    assert_problem(response, 429, "throttled")
    assert response["Retry-After"] == "5"
    assert len(receiver.requests) == 1
    assert Delivery.objects.count() == 1


def test_the_deliveries_show_the_test_with_its_try(api, cast, receiver):
    api.as_user(cast.owner)
    pk = api.post(URL, {**WEBHOOK, "config": {"url": receiver.url}}).json()["id"]
    sent = api.post(f"{URL}/{pk}/test").json()

    page = api.get(f"{URL}/{pk}/deliveries").json()

    assert page["count"] == 1
    assert page["results"] == [sent]
    assert api.get(f"{URL}/{pk}/deliveries?status=delivered").json()["count"] == 1
    assert api.get(f"{URL}/{pk}/deliveries?status=failed").json()["count"] == 0
    assert api.get(f"{URL}/{pk}/deliveries?status=").json()["count"] == 1


def test_an_unknown_delivery_status_is_a_400(api, cast):
    channel = make_channel(cast)

    response = api.as_user(cast.owner).get(f"{URL}/{channel.id}/deliveries?status=lost")

    assert "status" in assert_problem(response, 400, "validation_error")["errors"]


def _delivery(channel, incident=None, tries=1, minutes=0):
    at = timezone.now() + timedelta(minutes=minutes)
    delivery = Delivery.objects.create(
        channel=channel,
        event="incident.opened" if incident else "test",
        event_id=uuid.uuid4(),
        incident=incident,
        occurred_at=at,
        created_at=at,
        status="failed",
        attempts=tries,
    )
    for n in range(tries):
        DeliveryAttempt.objects.create(
            delivery=delivery, attempted_at=at, ok=False, error=f"try {n}", duration_ms=1.0
        )
    return delivery


def test_deliveries_are_newest_first_in_a_fixed_number_of_queries(api, cast):
    channel = make_channel(cast)
    api.as_user(cast.owner)
    path = f"{URL}/{channel.id}/deliveries"

    _delivery(channel, tries=2)
    one = queries_of_get(api, path)
    for n in range(1, 6):
        _delivery(channel, tries=3, minutes=n)

    assert queries_of_get(api, path) == one
    results = api.get(path).json()["results"]
    assert [len(d["tries"]) for d in results] == [3, 3, 3, 3, 3, 2]
    assert [t["error"] for t in results[0]["tries"]] == ["try 0", "try 1", "try 2"]


def test_members_see_no_deliveries_about_projects_they_cannot_see(api, cast, make_endpoint):
    hidden = Project.objects.create(organization=cast.org, name="Payments")
    channel = make_channel(cast)
    theirs = Incident.objects.create(endpoint=make_endpoint(hidden), started_at=timezone.now())
    mine = Incident.objects.create(endpoint=make_endpoint(cast.project), started_at=timezone.now())
    _delivery(channel, incident=theirs)
    _delivery(channel, incident=mine, minutes=1)
    _delivery(channel, minutes=2)
    path = f"{URL}/{channel.id}/deliveries"

    seen = api.as_user(cast.member).get(path).json()["results"]

    assert [d["incident"] for d in seen] == [None, str(mine.id)]
    assert api.as_user(cast.owner).get(path).json()["count"] == 3
