"""Subscribing to a status page in Chromium, end to end through real mail files: a reader
subscribes, confirms from the mailed link, receives one update mail with one-click
unsubscribe headers, unsubscribes from its link, and then receives nothing more."""

import email
import email.policy
import re
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

from accounts.models import User
from monitoring.models import Endpoint
from statuspages.models import Subscriber
from statuspages.tasks import fan_out_subscriber_mails
from tests.browser.conftest import shot
from tests.statuspages.pages import declare, make_page

READER = "reader@example.com"
WIDTHS = (1280, 390)


def _mails(folder: Path) -> list[EmailMessage]:
    """Every message the file backend wrote, oldest first: each .log file holds the messages
    of one connection, each followed by a line of 79 dashes."""
    messages: list[EmailMessage] = []
    for log in sorted(folder.glob("*.log"), key=lambda path: path.stat().st_mtime_ns):
        for raw in log.read_bytes().split(b"\n" + b"-" * 79 + b"\n"):
            if raw.strip():
                parsed = email.message_from_bytes(raw, policy=email.policy.default)
                assert isinstance(parsed, EmailMessage)
                messages.append(parsed)
    return messages


def _text(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    return str(body.get_content())


def _local(live_server: LiveServer, url: str, base: str) -> str:
    """A mailed link (on WEB_BASE_URL) opened on the live server instead."""
    assert url.startswith(base + "/"), url
    return live_server.url + url.removeprefix(base)


def _shots(page: Page, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"status-{name}-{width}")
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})


@pytest.fixture
def mail_folder(settings: Any, tmp_path: Path) -> Path:
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    return tmp_path / "mail"


@pytest.fixture
def fan_out(django_capture_on_commit_callbacks: Callable[..., Any]) -> Callable[[], int]:
    """One beat of the fan-out; its send batches run (eager Celery) once it commits."""

    def once() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return int(fan_out_subscriber_mails())

    return once


def _post_update(api: Any, owner: User, incident_id: Any, message: str) -> None:
    response = api.as_user(owner).post(
        f"/api/v1/incidents/{incident_id}/updates",
        {"status": "identified", "message": message, "notify_subscribers": True},
    )
    assert response.status_code == 201, response.content
    assert response.json()["notify_subscribers"] is True


def test_subscribe_confirm_receive_unsubscribe_then_nothing(
    page: Page,
    cast: Any,
    make_endpoint: Callable[..., Endpoint],
    live_server: LiveServer,
    settings: Any,
    mail_folder: Path,
    api: Any,
    fan_out: Callable[[], int],
) -> None:
    base = settings.WEB_BASE_URL
    endpoint = make_endpoint(cast.project, name="Checkout")
    make_page(cast.org, {"Core": [endpoint]}, title="Acme status")
    incident = declare(cast.org, [endpoint], at=endpoint.created_at, title="Slow checkout")

    # The reader subscribes from the public page.
    page.goto(f"{live_server.url}/status/acme")
    page.get_by_role("textbox", name="Email").fill(READER)
    page.get_by_role("button", name="Subscribe").click()
    page.get_by_role("heading", name="Check your inbox").wait_for()
    _shots(page, "subscribe-sent")

    # The confirmation mail is in the file; its link shows a button that confirms.
    [confirmation] = _mails(mail_folder)
    assert confirmation["To"] == READER
    confirm = re.search(rf"{re.escape(base)}/status/acme/confirm/\S+", _text(confirmation))
    assert confirm is not None, _text(confirmation)
    page.goto(_local(live_server, confirm.group(0), base))
    _shots(page, "subscribe-confirm")
    assert Subscriber.objects.get().confirmed_at is None  # opening the link is not enough
    page.get_by_role("button", name="Confirm my subscription").click()
    page.get_by_role("heading", name="You are subscribed").wait_for()
    assert Subscriber.objects.get().confirmed_at is not None

    # The owner posts an update through the API; one beat mails it to the reader, once.
    _post_update(api, cast.owner, incident.id, "We found a **slow** query.\n\n- rolled back")
    assert fan_out() == 1
    assert fan_out() == 0
    [_, update] = _mails(mail_folder)
    assert update["To"] == READER
    assert "We found a **slow** query." in _text(update)
    unsubscribe_header = update["List-Unsubscribe"]
    assert update["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # The URL is too long for one header line: folded, it reads back with a leading space.
    link = re.fullmatch(r"<(\S+)>", str(unsubscribe_header).strip())
    assert link is not None, unsubscribe_header
    assert link.group(1) in _text(update)  # the same link is in the body for people

    # The reader opens the unsubscribe link and presses its button.
    page.goto(_local(live_server, link.group(1), base))
    _shots(page, "subscribe-unsubscribe")
    assert Subscriber.objects.exists()  # opening the link (a mail scanner, say) changes nothing
    page.get_by_role("button", name="Unsubscribe").click()
    page.wait_for_load_state()
    assert not Subscriber.objects.exists()

    # A second update reaches nobody.
    _post_update(api, cast.owner, incident.id, "Fixed.")
    assert fan_out() == 0
    assert len(_mails(mail_folder)) == 2
