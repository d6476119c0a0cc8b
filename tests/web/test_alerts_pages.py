"""The alerts page: channels and maintenance windows, read by everyone, managed by owners and
admins; destinations masked, a webhook's secret shown once, tests sent for real."""

import hashlib
import hmac
import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.utils import timezone

from accounts.models import Project
from alerts.models import (
    Delivery,
    DeliveryAttempt,
    MaintenanceWindow,
    NotificationChannel,
)
from alerts.services import channel_create, maintenance_window_save
from alerts.transport import checked_url
from monitoring.targets import TargetError
from tests.web.conftest import Markup, fragment, html, visible_text

SLACK_URL = "https://hooks.slack.com/services/T000/B000/SECRETPART"
HOSTILE = "<script>alert(7)</script>"


class Receiver:
    """A local webhook receiver: records each POST and answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/healthmon"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def receiver(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    server = Receiver()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def strict(settings):
    """The default network policy: no private address, no exception."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []


@pytest.fixture
def slack(cast):
    return channel_create(
        organization=cast.org, name="Ops Slack", kind="slack", config={"url": SLACK_URL}
    )


@pytest.fixture
def window(cast):
    start = timezone.now() + timedelta(days=2)
    return maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="DB upgrade",
        starts_at=start,
        ends_at=start + timedelta(hours=2),
    )


@pytest.fixture
def hidden(cast):
    """A project of Acme the member is not granted."""
    return Project.objects.create(organization=cast.org, name="Secret project")


def local(moment: datetime) -> str:
    """A `datetime-local` input value (UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def channel_row(response, channel):
    return visible_text(fragment(response, f'<tr data-channel="{channel.pk}">'))


def window_row(response, window):
    return visible_text(fragment(response, f'<tr data-window="{window.pk}">'))


def snapshot():
    return {
        "channels": sorted(
            NotificationChannel.objects.values_list("id", "name", "enabled", "failing_since")
        ),
        "windows": sorted(MaintenanceWindow.objects.values_list("id", "name", "ends_at")),
        "deliveries": Delivery.objects.count(),
    }


# --- Reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["owner", "admin", "member"])
def test_the_page_lists_channels_and_windows_for_every_role(pages, cast, slack, window, who):
    response = pages.as_user(getattr(cast, who)).get("/alerts")

    assert response.status_code == 200
    assert Markup(html(response)).find("a", href="/alerts", aria_current="page")
    row = channel_row(response, slack)
    assert "Ops Slack" in row
    assert "Slack incoming webhook" in row
    assert "https://hooks.slack.com/****" in row
    assert "whole organization" in row
    assert "enabled" in row
    assert "none yet" in row
    assert window_row(response, window).startswith("DB upgrade")
    assert "once" in window_row(response, window)
    assert "planned" in window_row(response, window)


def test_the_page_needs_a_sign_in(pages, cast):
    response = pages.get("/alerts")

    assert response.status_code == 302
    assert response["Location"].startswith("/login")


def test_the_slack_secret_path_never_reaches_the_page(pages, cast, slack):
    for user in (cast.owner, cast.member):
        source = html(pages.as_user(user).get("/alerts"))
        assert "SECRETPART" not in source
        assert "T000" not in source
        assert "https://hooks.slack.com/****" in source


def test_managers_see_the_forms_and_actions(pages, cast, slack, window):
    markup = Markup(html(pages.as_user(cast.admin).get("/alerts")))

    actions = {attrs["action"] for attrs in markup.find("form", method="post")}

    assert {
        "/alerts/channels/new",
        f"/alerts/channels/{slack.pk}/disable",
        f"/alerts/channels/{slack.pk}/test",
        f"/alerts/channels/{slack.pk}/delete",
        "/alerts/maintenance/new",
        f"/alerts/maintenance/{window.pk}/delete",
    } <= actions


def test_a_member_reads_without_any_form(pages, cast, slack, window):
    source = html(pages.as_user(cast.member).get("/alerts"))

    actions = [attrs["action"] for attrs in Markup(source).find("form")]
    assert actions == ["/logout"]
    assert "Ops Slack" in source
    assert "DB upgrade" in source


def member_posts(slack, window):
    return [
        ("/alerts/channels/new", {"name": "Mine", "kind": "slack", "url": SLACK_URL}),
        (f"/alerts/channels/{slack.pk}/disable", {}),
        (f"/alerts/channels/{slack.pk}/enable", {}),
        (f"/alerts/channels/{slack.pk}/test", {}),
        (f"/alerts/channels/{slack.pk}/delete", {}),
        (
            "/alerts/maintenance/new",
            {"starts_at": "2030-01-01T00:00", "ends_at": "2030-01-01T01:00"},
        ),
        (f"/alerts/maintenance/{window.pk}/delete", {}),
    ]


def test_every_post_of_a_member_is_a_403_and_changes_nothing(pages, cast, slack, window):
    pages.as_user(cast.member)
    before = snapshot()
    for url, body in member_posts(slack, window):
        response = pages.post(url, body)
        assert response.status_code == 403, url
        assert "This page needs the owner or admin role." in visible_text(response)
    assert snapshot() == before
    assert cache.get(f"channel-test:{slack.pk}") is None


def test_a_member_sees_only_channels_and_windows_touching_its_projects(
    pages, cast, hidden, make_endpoint
):
    granted_site = make_endpoint(cast.project, name="Granted site")
    hidden_site = make_endpoint(hidden, name="Hidden site")
    both = channel_create(
        organization=cast.org,
        name="Both",
        kind="email",
        config={"addresses": ["ops@acme.test"], "to_members": False},
        projects=[cast.project, hidden],
        endpoints=[hidden_site],
    )
    channel_create(
        organization=cast.org, name="Hidden only", kind="slack", config={"url": SLACK_URL}
    ).projects.set([hidden])
    start = timezone.now() + timedelta(days=1)
    maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Hidden work",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        endpoints=[hidden_site],
    )
    maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Granted work",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        endpoints=[granted_site],
    )

    member = pages.as_user(cast.member).get("/alerts")
    owner = pages.as_user(cast.owner).get("/alerts")

    source = html(member)
    assert channel_row(member, both).count("Default") == 1
    for text in ("Hidden only", "Hidden work", "Hidden site", "Secret project"):
        assert text not in source
    assert "Granted work" in source
    assert "Granted site" in source
    assert "Default, Secret project, Hidden site" in channel_row(owner, both)
    assert "Hidden only" in html(owner)


# --- Creating channels -----------------------------------------------------------------------


def test_a_manager_adds_a_slack_channel_shown_masked(pages, cast, strict):
    pages.as_user(cast.owner)

    response = pages.post(
        "/alerts/channels/new",
        {"name": "Chat", "kind": "slack", "url": SLACK_URL, "projects": [str(cast.project.pk)]},
    )

    assert response.status_code == 302
    assert response["Location"] == "/alerts"
    channel = NotificationChannel.objects.get()
    assert (channel.organization, channel.kind, channel.config) == (
        cast.org,
        "slack",
        {"url": SLACK_URL},
    )
    assert list(channel.projects.all()) == [cast.project]
    assert channel.secret == ""
    page = pages.get("/alerts")
    assert "The channel Chat is added." in visible_text(page)
    assert "SECRETPART" not in html(page)
    assert "Default" in channel_row(page, channel)


def test_a_new_webhook_shows_its_signing_secret_once(pages, cast, strict):
    pages.as_user(cast.admin)

    response = pages.post(
        "/alerts/channels/new",
        {"name": "Hook", "kind": "webhook", "url": "https://hooks.example.com/in?token=abc"},
    )

    channel = NotificationChannel.objects.get()
    assert response.status_code == 200
    assert channel.secret
    assert channel.secret in html(response)
    assert "shown this once" in visible_text(response)
    assert "no-cache" in response["Cache-Control"]
    assert "token=abc" not in html(response)
    again = pages.get("/alerts")
    assert channel.secret not in html(again)
    assert "https://hooks.example.com/****" in channel_row(again, channel)


def test_an_email_channel_lists_its_addresses_and_the_members(pages, cast):
    pages.as_user(cast.owner)

    response = pages.post(
        "/alerts/channels/new",
        {
            "name": "Mail",
            "kind": "email",
            "addresses": "ops@acme.test, oncall@acme.test\nops@acme.test",
            "to_members": "on",
        },
    )

    assert response.status_code == 302
    channel = NotificationChannel.objects.get()
    assert channel.config == {
        "addresses": ["ops@acme.test", "oncall@acme.test"],
        "to_members": True,
    }
    row = channel_row(pages.get("/alerts"), channel)
    assert "ops@acme.test, oncall@acme.test, all project members" in row


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"name": "", "kind": "slack", "url": SLACK_URL}, "name", "This field is required."),
        ({"name": "x", "kind": "pager", "url": SLACK_URL}, "kind", "Select a valid choice."),
        ({"name": "x", "kind": "slack"}, "url", "A URL is required for this kind of channel."),
        ({"name": "x", "kind": "teams", "url": "ftp://files.test/"}, "url", "must start with"),
        ({"name": "x", "kind": "discord", "url": "https://a.test\\@b.test/"}, "url", "Backslash"),
        ({"name": "x", "kind": "email"}, "addresses", "Give addresses, or mail the project"),
        ({"name": "x", "kind": "email", "addresses": "a@b.test nope"}, "addresses", "nope is not"),
        ({"name": "x" * 201, "kind": "slack", "url": SLACK_URL}, "name", "at most 200"),
    ],
)
def test_an_invalid_channel_is_shown_again_with_its_errors(
    pages, cast, strict, body, field, message
):
    response = pages.as_user(cast.owner).post("/alerts/channels/new", body)

    assert response.status_code == 400
    errors = fragment(response, 'action="/alerts/channels/new"', "</form>")
    assert message in visible_text(errors)
    assert not NotificationChannel.objects.exists()
    assert Markup(errors).find("input", name="name", value=body["name"])


PRIVATE_URLS = [
    "http://127.0.0.1:8080/hook",
    "http://localhost/hook",
    "http://api.localhost./hook",
    "https://10.1.2.3/hook",
    "https://192.168.0.10/",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://2130706433/hook",
    "http://0177.0.0.1/hook",
    "http://127.1/hook",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_a_private_url_is_refused_with_a_form_error(pages, cast, strict, url):
    response = pages.as_user(cast.owner).post(
        "/alerts/channels/new", {"name": "Inside", "kind": "webhook", "url": url}
    )

    assert response.status_code == 400
    assert "private, loopback or otherwise reserved address" in visible_text(response)
    assert not NotificationChannel.objects.exists()


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_checked_url_refuses_literal_private_hosts(strict, url):
    with pytest.raises(TargetError):
        checked_url(url)


@pytest.mark.parametrize(
    "url",
    ["https://hooks.slack.com/x", "https://93.184.215.14/hook", "https://internal.corp.test/"],
)
def test_public_addresses_and_names_pass_without_resolving(strict, url, monkeypatch):
    def no_dns(*args):
        raise AssertionError("no DNS lookup here")

    monkeypatch.setattr("socket.getaddrinfo", no_dns)
    monkeypatch.setattr("socket.gethostbyname", no_dns)

    assert checked_url(url) == url


def test_allowed_networks_and_the_private_switch_let_private_urls_through(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    checked_url("http://127.0.0.1:9000/hook")
    checked_url("http://localhost/hook")
    with pytest.raises(TargetError):
        checked_url("http://10.0.0.1/hook")

    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    checked_url("http://10.0.0.1/hook")


def test_a_foreign_project_in_the_form_is_a_400(pages, cast, strict):
    response = pages.as_user(cast.outsider).post(
        "/alerts/channels/new",
        {"name": "x", "kind": "slack", "url": SLACK_URL, "projects": [str(cast.project.pk)]},
    )

    assert response.status_code == 400
    assert "Select a valid choice." in visible_text(response)
    assert not NotificationChannel.objects.exists()


# --- Managing channels -----------------------------------------------------------------------


def test_disable_then_enable_clears_the_failing_flag(pages, cast, slack):
    pages.as_user(cast.owner)
    NotificationChannel.objects.filter(pk=slack.pk).update(
        failing_since=timezone.now(), consecutive_failures=3
    )
    assert "failing" in channel_row(pages.get("/alerts"), slack)

    disabled = pages.post(f"/alerts/channels/{slack.pk}/disable")
    page = pages.get("/alerts")

    assert disabled.status_code == 302
    assert NotificationChannel.objects.get(pk=slack.pk).enabled is False
    assert "Ops Slack is disabled." in visible_text(page)
    assert "disabled" in channel_row(page, slack)
    assert Markup(html(page)).find("form", action=f"/alerts/channels/{slack.pk}/enable")

    pages.post(f"/alerts/channels/{slack.pk}/enable")

    channel = NotificationChannel.objects.get(pk=slack.pk)
    assert (channel.enabled, channel.failing_since, channel.consecutive_failures) == (True, None, 0)
    assert "failing" not in channel_row(pages.get("/alerts"), slack)


def test_delete_removes_the_channel_and_its_deliveries(pages, cast, slack):
    Delivery.objects.create(
        channel=slack,
        event="test",
        event_id="00000000-0000-0000-0000-000000000001",
        occurred_at=timezone.now(),
    )

    response = pages.as_user(cast.admin).post(f"/alerts/channels/{slack.pk}/delete")

    assert response.status_code == 302
    assert not NotificationChannel.objects.exists()
    assert not Delivery.objects.exists()
    assert "The channel Ops Slack is deleted." in visible_text(pages.get("/alerts"))


def test_a_test_reaches_a_real_local_receiver_signed(pages, cast, receiver):
    pages.as_user(cast.owner)
    created = pages.post(
        "/alerts/channels/new", {"name": "Local", "kind": "webhook", "url": receiver.url}
    )
    assert created.status_code == 200
    channel = NotificationChannel.objects.get()

    response = pages.post(f"/alerts/channels/{channel.pk}/test")
    page = pages.get(response["Location"])

    assert response.status_code == 302
    assert "The test reached Local." in visible_text(page)
    [(headers, body)] = receiver.received
    expected = hmac.new(channel.secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Healthmon-Signature"] == f"sha256={expected}"
    assert json.loads(body)["event"] == "test"
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert DeliveryAttempt.objects.get().status_code == 200
    assert "delivered · Test" in channel_row(page, channel)


def test_a_second_test_within_five_seconds_is_refused(pages, cast, receiver):
    channel = channel_create(
        organization=cast.org, name="Local", kind="webhook", config={"url": receiver.url}
    )
    pages.as_user(cast.owner)

    pages.post(f"/alerts/channels/{channel.pk}/test")
    again = pages.post(f"/alerts/channels/{channel.pk}/test")

    assert again.status_code == 302
    assert "A test was just sent to Local: wait a few seconds." in visible_text(
        pages.get("/alerts")
    )
    assert len(receiver.received) == 1
    assert Delivery.objects.count() == 1
    cache.delete(f"channel-test:{channel.pk}")  # what five seconds do
    pages.post(f"/alerts/channels/{channel.pk}/test")
    assert len(receiver.received) == 2


def test_a_failed_test_shows_its_error_and_is_listed(pages, cast, receiver):
    receiver.status = 500
    channel = channel_create(
        organization=cast.org, name="Broken", kind="slack", config={"url": receiver.url}
    )
    pages.as_user(cast.owner)

    pages.post(f"/alerts/channels/{channel.pk}/test")
    page = pages.get("/alerts")

    assert "The test to Broken failed: HTTP 500." in visible_text(page)
    assert "failed · Test" in channel_row(page, channel)
    assert "HTTP 500" in channel_row(page, channel)
    assert "/hooks/healthmon" not in html(page)


def test_the_last_five_deliveries_are_listed(pages, cast, slack):
    start = timezone.now() - timedelta(hours=1)
    for n in range(8):
        delivery = Delivery.objects.create(
            channel=slack,
            event="incident.opened",
            event_id=f"00000000-0000-0000-0000-00000000000{n}",
            occurred_at=start + timedelta(minutes=n),
            status="failed",
            last_error=f"error number {n}",
        )
        Delivery.objects.filter(pk=delivery.pk).update(created_at=start + timedelta(minutes=n))

    row = channel_row(pages.as_user(cast.member).get("/alerts"), slack)

    assert [n for n in range(8) if f"error number {n}" in row] == [3, 4, 5, 6, 7]
    assert "failed · Incident opened" in row


# --- Maintenance windows ---------------------------------------------------------------------


def test_a_window_in_progress_is_marked(pages, cast):
    now = timezone.now()
    pages.as_user(cast.owner)

    response = pages.post(
        "/alerts/maintenance/new",
        {
            "name": "Migration",
            "starts_at": local(now - timedelta(hours=1)),
            "ends_at": local(now + timedelta(hours=1)),
            "projects": [str(cast.project.pk)],
        },
    )

    assert response.status_code == 302
    window = MaintenanceWindow.objects.get()
    assert window.starts_at == (now - timedelta(hours=1)).replace(second=0, microsecond=0)
    assert window.starts_at.utcoffset() == timedelta(0)
    assert (window.recurrence, list(window.projects.all())) == ("", [cast.project])
    row = window_row(pages.as_user(cast.member).get("/alerts"), window)
    assert "in progress" in row
    assert "Default" in row


def test_a_weekly_window_repeats(pages, cast):
    start = timezone.now() - timedelta(days=7, minutes=30)
    pages.as_user(cast.admin)

    pages.post(
        "/alerts/maintenance/new",
        {"starts_at": local(start), "ends_at": local(start + timedelta(hours=1)), "weekly": "on"},
    )

    window = MaintenanceWindow.objects.get()
    assert window.recurrence == "weekly"
    row = window_row(pages.get("/alerts"), window)
    assert "weekly" in row
    assert "in progress" in row
    assert "whole organization" in row


def test_an_ended_window_says_so(pages, cast):
    start = timezone.now() - timedelta(days=3)
    window = maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=start,
        ends_at=start + timedelta(hours=1),
    )

    row = window_row(pages.as_user(cast.owner).get("/alerts"), window)

    assert "ended" in row
    assert "in progress" not in row


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"starts_at": "2030-01-01T02:00", "ends_at": "2030-01-01T01:00"}, "Must be after"),
        (
            {"starts_at": "2030-01-01T00:00", "ends_at": "2030-01-09T00:00", "weekly": "on"},
            "A weekly window lasts less than 7 days.",
        ),
        ({"starts_at": "tomorrow", "ends_at": "2030-01-01T01:00"}, "Enter a valid date/time."),
        ({"ends_at": "2030-01-01T01:00"}, "This field is required."),
    ],
)
def test_an_invalid_window_is_shown_again_with_its_errors(pages, cast, body, message):
    response = pages.as_user(cast.owner).post("/alerts/maintenance/new", {"name": "W", **body})

    assert response.status_code == 400
    errors = fragment(response, 'action="/alerts/maintenance/new"', "</form>")
    assert message in visible_text(errors)
    assert not MaintenanceWindow.objects.exists()


def test_delete_a_window(pages, cast, window):
    response = pages.as_user(cast.owner).post(f"/alerts/maintenance/{window.pk}/delete")

    assert response.status_code == 302
    assert not MaintenanceWindow.objects.exists()
    assert "The maintenance window DB upgrade is deleted." in visible_text(pages.get("/alerts"))


# --- Isolation and escaping ------------------------------------------------------------------


def test_foreign_and_missing_ids_are_404_and_change_nothing(pages, cast, slack, window):
    pages.as_user(cast.outsider)
    before = snapshot()
    missing = "00000000-0000-0000-0000-000000000000"
    urls = [
        url
        for url, _ in member_posts(slack, window)
        if str(slack.pk) in url or str(window.pk) in url
    ]

    for url in urls:
        foreign = pages.post(url)
        absent = pages.post(url.replace(str(slack.pk), missing).replace(str(window.pk), missing))
        assert foreign.status_code == absent.status_code == 404, url
        assert visible_text(foreign) == visible_text(absent)
    assert snapshot() == before
    assert "Ops Slack" not in html(pages.get("/alerts"))
    assert "DB upgrade" not in html(pages.get("/alerts"))


def test_a_member_posting_on_a_channel_it_cannot_see_is_403_first(pages, cast, hidden):
    channel = channel_create(
        organization=cast.org, name="Hidden", kind="slack", config={"url": SLACK_URL}
    )
    channel.projects.set([hidden])

    response = pages.as_user(cast.member).post(f"/alerts/channels/{channel.pk}/delete")

    assert response.status_code == 403
    assert NotificationChannel.objects.filter(pk=channel.pk).exists()


def test_names_and_errors_are_escaped(pages, cast, strict):
    Project.objects.filter(pk=cast.project.pk).update(name=HOSTILE)
    channel = channel_create(
        organization=cast.org,
        name=HOSTILE,
        kind="email",
        config={"addresses": ["ops@acme.test"], "to_members": False},
        projects=[cast.project],
    )
    Delivery.objects.create(
        channel=channel,
        event="test",
        event_id="00000000-0000-0000-0000-000000000001",
        occurred_at=timezone.now(),
        status="failed",
        last_error=HOSTILE,
    )
    maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name=HOSTILE,
        starts_at=timezone.now(),
        ends_at=timezone.now() + timedelta(hours=1),
    )
    pages.as_user(cast.owner)

    page = pages.get("/alerts")
    refused = pages.post("/alerts/channels/new", {"name": HOSTILE, "kind": "slack", "url": HOSTILE})
    deleted = pages.get(pages.post(f"/alerts/channels/{channel.pk}/delete")["Location"])

    for response in (page, refused, deleted):
        assert "<script>alert(7)" not in html(response)
        assert not "".join(Markup(html(response)).script_bodies).strip()
    assert html(page).count("&lt;script&gt;alert(7)&lt;/script&gt;") >= 4


def test_no_template_of_the_page_turns_escaping_off():
    templates = Path(django_settings.BASE_DIR) / "templates"
    paths = [*(templates / "alerts").glob("*.html"), *(templates / "monitoring").glob("_*.html")]
    assert templates / "alerts" / "alerts.html" in paths
    for path in paths:
        text = path.read_text()
        assert "|safe" not in text, path.name
        assert "autoescape off" not in text, path.name
        assert "<script" not in text, path.name


def test_a_member_sees_no_delivery_about_a_project_it_cannot_see(
    pages, cast, slack, hidden, make_endpoint, record
):
    from alerts.delivery import channel_test

    mine = make_endpoint(cast.project, name="Mine", failure_threshold=1)
    theirs = make_endpoint(hidden, name="Theirs", failure_threshold=1)
    record(mine, [(timezone.now(), False, 5.0, "mine is down")])
    record(theirs, [(timezone.now(), False, 5.0, "theirs is down")])
    Delivery.objects.filter(incident__endpoint=theirs).update(last_error="about-theirs")
    Delivery.objects.filter(incident__endpoint=mine).update(last_error="about-mine")
    channel_test(channel=slack)

    member = channel_row(pages.as_user(cast.member).get("/alerts"), slack)
    owner = channel_row(pages.as_user(cast.owner).get("/alerts"), slack)
    assert "about-mine" in member
    assert "about-theirs" not in member
    assert "Test" in member
    assert "about-theirs" in owner
