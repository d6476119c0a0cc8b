"""Apprise channels over the API and the pages: the URL read by Apprise's own parser (an
unknown scheme, a malformed URL, a private host or a local-only service is a 400 naming
`config.url`), its secrets masked in every answer, page, admin page, delivery error and log
line, roles as for every channel, and the form's list of example URLs."""

import logging
import re
import uuid
from html import unescape
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from alerts.apprise_transport import checked_apprise_url, masked_apprise_url, url_secrets
from alerts.models import Delivery, DeliveryAttempt, NotificationChannel
from monitoring.probes.secrets import scrub
from tests.alerts.receiver import apprise_channel
from tests.helpers import admin_url, assert_problem

URL = "/api/v1/notification-channels"
TOKEN = "tk_Sup3rSecretT0ken9"
NTFY = {"name": "Phones", "kind": "apprise", "config": {"url": f"ntfy://{TOKEN}@ntfy.sh/ops"}}
BOT = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@pytest.fixture
def strict_policy(settings) -> None:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []


def test_create_an_apprise_channel(api, cast):
    response = api.as_user(cast.owner).post(URL, NTFY)

    assert response.status_code == 201, response.content
    assert response.json()["config"] == {"url": "ntfy://t...9@ntfy.sh/ops"}
    assert "secret" not in response.json()
    channel = NotificationChannel.objects.get()
    assert channel.config == {"url": f"ntfy://{TOKEN}@ntfy.sh/ops"}


@pytest.mark.parametrize(
    "url",
    [
        "foo://bar/baz",  # unknown scheme
        "tgram://",  # a known service, no bot token
        "tgram://not-a-token/12345",  # malformed token
        "pover://",  # Pushover without its keys
        "ntfy.sh/topic",  # no scheme
        "syslog://",  # the server's own syslog
        "",
        "x" * 2100,
        "ntfy://ntfy.sh/****",  # a masked form that is not the stored one
    ],
)
def test_a_url_apprise_cannot_send_to_is_a_400_naming_config_url(api, cast, url):
    body = {**NTFY, "config": {"url": url}}

    response = api.as_user(cast.owner).post(URL, body)

    assert "config.url" in assert_problem(response, 400, "validation_error")["errors"]
    assert not NotificationChannel.objects.exists()


def test_an_unknown_scheme_is_named(api, cast):
    response = api.as_user(cast.owner).post(URL, {**NTFY, "config": {"url": "foo://bar"}})

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert errors["config.url"] == ['Apprise knows no service "foo://".']


def test_every_bad_field_is_named_at_once(api, cast):
    body = {"name": " ", "kind": "apprise", "config": {"url": "foo://bar", "token": "x"}}

    errors = assert_problem(api.as_user(cast.owner).post(URL, body), 400, "validation_error")[
        "errors"
    ]

    assert {"name", "config.url", "config.token"} <= set(errors)


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.1:8080/hook",
        "json://[::1]/hook",
        "form://10.0.0.5/hook",
        "ntfy://192.168.1.10/topic",
        "mmost://2130706433/token",
        "gotify://localhost/token",
        "mailtos://user:pw@example.com?smtp=10.1.1.1&to=ops@example.com",
        "mailto://user:pw@example.com?smtp=127.0.0.1&to=ops@example.com",
        "json://169.254.169.254/latest",
    ],
)
def test_a_private_host_is_refused_by_the_network_policy(api, cast, strict_policy, url):
    response = api.as_user(cast.owner).post(URL, {**NTFY, "config": {"url": url}})

    problem = assert_problem(response, 400, "validation_error")
    assert "network policy" in problem["errors"]["config.url"][0]
    assert not NotificationChannel.objects.exists()


def test_a_private_host_is_accepted_when_the_policy_allows_it(api, cast, settings):
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    api.as_user(cast.owner)

    allowed = api.post(URL, {**NTFY, "config": {"url": "ntfy://127.0.0.1:8080/ops"}})
    refused = api.post(URL, {**NTFY, "config": {"url": "ntfy://10.0.0.1/ops"}})

    assert allowed.status_code == 201, allowed.content
    assert "config.url" in assert_problem(refused, 400, "validation_error")["errors"]


def test_a_patch_to_an_unknown_scheme_changes_nothing(api, cast):
    channel = apprise_channel(cast, NTFY["config"]["url"])

    response = api.as_user(cast.owner).patch(f"{URL}/{channel.pk}", {"config": {"url": "nope://x"}})

    assert "config.url" in assert_problem(response, 400, "validation_error")["errors"]
    assert NotificationChannel.objects.get().config == NTFY["config"]


def test_patching_back_the_masked_url_keeps_the_stored_one(api, cast):
    api.as_user(cast.owner)
    created = api.post(URL, NTFY).json()

    response = api.patch(f"{URL}/{created['id']}", {"name": "Pager", "config": created["config"]})

    assert response.status_code == 200, response.content
    assert NotificationChannel.objects.get().config == NTFY["config"]


def test_members_cannot_create_one_and_outsiders_see_a_404(api, cast):
    channel = apprise_channel(cast, NTFY["config"]["url"])

    refused = api.as_user(cast.member).post(URL, NTFY)
    foreign = api.as_user(cast.outsider).get(f"{URL}/{channel.pk}")
    missing = api.get(f"{URL}/{uuid.uuid4()}")

    assert_problem(refused, 403, "permission_denied")
    assert_problem(foreign, 404, "not_found")
    assert foreign.content == missing.content
    assert NotificationChannel.objects.count() == 1


# --- Masking ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        (f"ntfy://{TOKEN}@ntfy.sh/ops", [TOKEN]),
        (f"tgram://{BOT}/-1001234567", [BOT, BOT.split(":")[1]]),
        ("pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi", ["uQiRzpo4DXgh"]),
        ("json://user:hunter2-Pw@hooks.example.com/in/PATH-TOKEN", ["hunter2-Pw", "PATH-TOKEN"]),
        ("mailto://ops:Mail-Pw-77@smtp.example.com?to=a@example.com", ["Mail-Pw-77"]),
        ("matrixs://bot:Matrix-Pw-1@matrix.example.com/#ops", ["Matrix-Pw-1"]),
    ],
)
def test_the_masked_form_shows_no_secret(url, secrets):
    shown = masked_apprise_url(url)

    assert shown.split("://")[0] in url
    for secret in secrets:
        assert secret not in shown


def test_the_secret_is_in_no_answer_page_admin_page_error_or_log_line(
    api, cast, client, superuser, receiver, caplog, log_lines
):
    caplog.set_level(logging.DEBUG)
    host = receiver.url.split("/")[2]
    secret_path, password = "in/PATH-T0KEN-42", "Hunter2-Pass"
    url = f"json://ops:{password}@{host}/{secret_path}"
    receiver.statuses = [500]
    api.as_user(cast.owner)
    created = api.post(URL, {**NTFY, "config": {"url": url}})
    pk = created.json()["id"]
    tested = api.post(f"{URL}/{pk}/test")
    client.force_login(cast.owner)
    staff = client.__class__()
    staff.force_login(superuser)
    delivery = Delivery.objects.get()
    seen = [
        created,
        tested,
        api.get(URL),
        api.get(f"{URL}/{pk}"),
        api.get(f"{URL}/{pk}/deliveries"),
        client.get("/alerts"),
        staff.get(admin_url(NotificationChannel, "changelist")),
        staff.get(admin_url(NotificationChannel, "change", pk)),
        staff.get(admin_url(Delivery, "change", delivery.pk)),
    ]

    assert tested.json()["status"] == "failed"
    assert "error=500" in tested.json()["last_error"]  # Apprise's words, scrubbed
    assert len(receiver.requests) == 1  # the request did go out, with the secrets
    for response in seen:
        assert response.status_code in (200, 201), response
        for secret in (password, secret_path):
            assert secret not in unescape(response.content.decode())
    stored = [delivery.last_error, *DeliveryAttempt.objects.values_list("error", flat=True)]
    for text in [*stored, caplog.text, log_lines.text()]:
        assert password not in text
        assert secret_path not in text


def test_the_channel_form_lists_popular_services_with_an_example_each(client, cast):
    client.force_login(cast.owner)

    page = client.get("/alerts").content.decode()

    for service in [
        "Telegram",
        "ntfy",
        "Pushover",
        "PagerDuty",
        "Opsgenie",
        "Matrix",
        "Mattermost",
        "Google Chat",
        "Rocket.Chat",
        "Gotify",
        "SMS via Twilio",
        "Email (SMTP)",
    ]:
        assert f"<td>{service}</td>" in page


def test_every_example_url_on_the_form_is_one_apprise_reads(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    template = Path(django_settings.BASE_DIR) / "templates/alerts/_apprise_examples.html"
    examples = re.findall(r"<code>([a-z]+://[^<]+)</code>", template.read_text())

    assert len(examples) >= 12
    for example in examples:
        assert checked_apprise_url(unescape(example)) == unescape(example)


def test_an_apprise_line_quoting_the_url_is_scrubbed_of_its_secrets():
    url = f"json://ops:Hunter2-Pass@hooks.example.com/in/PATH-T0KEN-42?+X-Api-Key={TOKEN}"
    line = (
        f"Failed to POST to {url} and to http://ops:Hunter2-Pass@hooks.example.com/in/PATH-T0KEN-42"
    )

    text = scrub(line, url_secrets(url))

    for secret in ("Hunter2-Pass", "PATH-T0KEN-42", TOKEN):
        assert secret not in text
    assert "hooks.example.com" in text  # the host is shown, as in the masked form


def test_the_page_form_adds_an_apprise_channel_and_refuses_a_bad_url(client, cast):
    client.force_login(cast.owner)

    refused = client.post(
        "/alerts/channels/new", {"name": "X", "kind": "apprise", "url": "foo://x"}
    )
    added = client.post(
        "/alerts/channels/new", {"name": "Phones", "kind": "apprise", "url": NTFY["config"]["url"]}
    )

    assert refused.status_code == 400
    assert "Apprise knows no service" in unescape(refused.content.decode())
    assert added.status_code == 302
    channel = NotificationChannel.objects.get()
    assert (channel.kind, channel.config) == ("apprise", NTFY["config"])
    page = client.get("/alerts").content.decode()
    assert "ntfy://t...9@ntfy.sh/ops" in page
    assert TOKEN not in page


def test_a_key_without_the_admin_scope_cannot_create_one(api, cast, make_key):
    api.with_key(make_key(cast.owner, "endpoint:create"))

    assert_problem(api.post(URL, NTFY), 403, "insufficient_scope")
    assert not NotificationChannel.objects.exists()
    assert api.with_key(make_key(cast.owner, "admin")).post(URL, NTFY).status_code == 201
