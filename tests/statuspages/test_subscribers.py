"""Subscribing to a status page: double opt-in, confirm and unsubscribe links, throttles."""

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.hashers import make_password
from django.template.loader import render_to_string
from django.test import Client

from accounts.services import organization_create
from statuspages.models import StatusPage, Subscriber, Visibility
from statuspages.services import subscribers as service
from statuspages.tasks import send_subscriber_confirmation
from tests.concurrency import race
from tests.statuspages.subscribing import confirmed, make_page

NOW = datetime(2030, 3, 4, 10, 0, tzinfo=UTC)
LINK = re.compile(r"https://healthmon\.test(/status/[a-z0-9-]+/confirm/[A-Za-z0-9_-]+)")


@pytest.fixture
def page(cast: Any) -> StatusPage:
    return make_page(cast.org, "acme")


@pytest.fixture
def post(client: Client, django_capture_on_commit_callbacks: Callable[..., Any]):
    """POST as a browser would, the on-commit mail tasks run (eager Celery)."""

    def send(path: str, data: dict[str, str] | None = None, ip: str = "198.51.100.7") -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(path, data or {}, REMOTE_ADDR=ip)

    return send


def _confirm_path(mail: Any) -> str:
    found = LINK.search(mail.body)
    assert found, mail.body
    return found.group(1)


def test_subscribing_mails_a_confirmation_link_and_says_check_your_inbox(page, post, outbox):
    response = post("/status/acme/subscribe", {"email": " Reader@Example.COM "})
    assert response.status_code == 200
    assert b"Check your inbox" in response.content
    subscriber = Subscriber.objects.get()
    assert subscriber.email == "reader@example.com"
    assert subscriber.confirmed_at is None
    [mail] = outbox
    assert mail.to == ["reader@example.com"]
    assert "Acme status" in mail.subject
    assert _confirm_path(mail) == f"/status/acme/confirm/{subscriber.token}"
    assert subscriber.token in mail.alternatives[0][0]


def test_a_confirmed_address_gets_the_same_answer_and_no_mail(page, post, outbox):
    confirmed(page, "reader@example.com")
    fresh = post("/status/acme/subscribe", {"email": "new@example.com"}, ip="192.0.2.1")
    known = post("/status/acme/subscribe", {"email": "READER@example.com"}, ip="192.0.2.2")
    assert known.status_code == fresh.status_code == 200
    assert known.content == fresh.content
    assert [m.to for m in outbox] == [["new@example.com"]]
    assert Subscriber.objects.filter(email__iexact="reader@example.com").count() == 1


@pytest.mark.parametrize("email", ["", "not-an-address", "a@b", "x" * 250 + "@example.com"])
def test_a_bad_address_shows_the_error_on_the_form(page, post, outbox, email):
    response = post("/status/acme/subscribe", {"email": email})
    assert response.status_code == 400
    assert b"Enter a valid email address." in response.content
    assert b'action="/status/acme/subscribe"' in response.content
    assert not Subscriber.objects.exists()
    assert outbox == []


def test_a_page_the_reader_cannot_see_takes_no_subscriber(cast, post, outbox):
    make_page(cast.org, "hidden", visibility=Visibility.PRIVATE)
    response = post("/status/hidden/subscribe", {"email": "reader@example.com"})
    unknown = post("/status/nowhere/subscribe", {"email": "reader@example.com"})
    assert response.status_code == unknown.status_code == 404
    assert not Subscriber.objects.exists()
    assert outbox == []


def test_a_member_may_see_a_private_page_but_not_subscribe_to_it(cast, client, monkeypatch):
    """Private pages take no subscribers even from a reader the gate lets in."""
    private = make_page(cast.org, "inside", visibility=Visibility.PRIVATE)
    monkeypatch.setattr("statuspages.views.subscribe.public_page", lambda request, slug: private)
    response = client.post("/status/inside/subscribe", {"email": "reader@example.com"})
    assert response.status_code == 404
    assert not Subscriber.objects.exists()


def test_a_locked_password_page_sends_the_subscriber_to_its_form(cast, post, outbox):
    """A reader whose browser session ended while the page was open: no 500, no mail."""
    locked = make_page(cast.org, "locked", visibility=Visibility.PASSWORD)
    StatusPage.objects.filter(pk=locked.pk).update(password_hash=make_password("pw-123456"))

    response = post("/status/locked/subscribe", {"email": "reader@example.com"})

    assert response.status_code == 302
    assert response["Location"] == "/status/locked/unlock?next=%2Fstatus%2Flocked"
    assert not Subscriber.objects.exists()
    assert outbox == []


def test_subscribe_takes_no_get(page, client):
    assert client.get("/status/acme/subscribe").status_code == 405


def test_opening_the_confirm_link_changes_nothing_until_the_button_is_pressed(page, post, client):
    post("/status/acme/subscribe", {"email": "reader@example.com"})
    token = Subscriber.objects.get().token
    shown = client.get(f"/status/acme/confirm/{token}")
    assert shown.status_code == 200
    assert f'action="/status/acme/confirm/{token}"'.encode() in shown.content
    assert Subscriber.objects.get().confirmed_at is None
    done = client.post(f"/status/acme/confirm/{token}")
    assert done.status_code == 200
    assert b"You are subscribed" in done.content
    assert Subscriber.objects.get().confirmed_at is not None
    assert client.post(f"/status/acme/confirm/{token}").status_code == 200  # idempotent


def test_the_confirm_button_is_protected_against_forged_posts(page, post):
    post("/status/acme/subscribe", {"email": "reader@example.com"})
    token = Subscriber.objects.get().token
    strict = Client(enforce_csrf_checks=True)
    assert strict.post(f"/status/acme/confirm/{token}").status_code == 403
    assert Subscriber.objects.get().confirmed_at is None


def test_unknown_or_tampered_tokens_answer_404_and_change_nothing(cast, page, client):
    other = make_page(cast.org, "other")
    subscriber = Subscriber.objects.create(page=page, email="reader@example.com")
    kept = confirmed(page, "kept@example.com")
    bad_paths = [
        f"/status/acme/confirm/{subscriber.token}x",
        f"/status/other/confirm/{subscriber.token}",  # another page's token
        f"/status/nowhere/confirm/{subscriber.token}",
        f"/status/acme/unsubscribe/{kept.token[:-1]}",
        f"/status/{other.slug}/unsubscribe/{kept.token}",
        "/status/acme/unsubscribe/" + "a" * 100,
    ]
    for path in bad_paths:
        for method in (client.get, client.post):
            response = method(path)
            assert response.status_code == 404, path
            assert b"Unknown link" in response.content
            assert b"reader@example.com" not in response.content
    assert Subscriber.objects.get(pk=subscriber.pk).confirmed_at is None
    assert Subscriber.objects.filter(pk=kept.pk).exists()


def test_unsubscribe_shows_a_button_then_one_click_post_works_without_csrf(page):
    subscriber = confirmed(page, "reader@example.com")
    path = f"/status/acme/unsubscribe/{subscriber.token}"
    strict = Client(enforce_csrf_checks=True)  # a mail client: no cookie, no token
    shown = strict.get(path)
    assert shown.status_code == 200
    assert f'action="{path}"'.encode() in shown.content
    assert Subscriber.objects.filter(pk=subscriber.pk).exists()
    done = strict.post(path, "List-Unsubscribe=One-Click", "application/x-www-form-urlencoded")
    assert done.status_code == 200
    assert b"You are unsubscribed" in done.content
    assert not Subscriber.objects.filter(pk=subscriber.pk).exists()
    assert strict.post(path).status_code == 404


def test_links_work_on_a_page_that_has_since_turned_private(page, client):
    subscriber = confirmed(page, "reader@example.com")
    StatusPage.objects.filter(pk=page.pk).update(visibility=Visibility.PRIVATE)
    response = client.post(f"/status/acme/unsubscribe/{subscriber.token}")
    assert response.status_code == 200
    assert not Subscriber.objects.exists()


# --- Throttles ---------------------------------------------------------------------------------


def test_one_client_address_is_throttled_then_let_in_after_the_window(page, post, outbox):
    limit = service.SUBSCRIBE_IP_LIMIT
    with time_machine.travel(NOW, tick=False) as clock:
        for n in range(limit):
            assert post("/status/acme/subscribe", {"email": f"r{n}@example.com"}).status_code == 200
        refused = post("/status/acme/subscribe", {"email": "late@example.com"})
        assert refused.status_code == 429
        assert 0 < int(refused["Retry-After"]) <= service.SUBSCRIBE_IP_WINDOW_SECONDS
        assert b"Too many requests" in refused.content
        other_ip = post("/status/acme/subscribe", {"email": "late@example.com"}, ip="192.0.2.9")
        assert other_ip.status_code == 200
        clock.shift(timedelta(seconds=int(refused["Retry-After"])))
        again = post("/status/acme/subscribe", {"email": "later@example.com"})
        assert again.status_code == 200
    assert len(outbox) == limit + 2


def test_bad_addresses_count_against_the_client_address(page, post):
    with time_machine.travel(NOW, tick=False):
        for _ in range(service.SUBSCRIBE_IP_LIMIT):
            assert post("/status/acme/subscribe", {"email": "nope"}).status_code == 400
        refused = post("/status/acme/subscribe", {"email": "reader@example.com"})
    assert refused.status_code == 429
    assert not Subscriber.objects.exists()


def test_one_address_gets_one_mail_per_window_whatever_the_client_or_page(cast, page, post, outbox):
    make_page(cast.org, "beta")
    window = service.SUBSCRIBE_ADDRESS_WINDOW_SECONDS
    with time_machine.travel(NOW, tick=False) as clock:
        assert post("/status/acme/subscribe", {"email": "reader@example.com"}).status_code == 200
        for ip, slug in [("192.0.2.1", "acme"), ("192.0.2.2", "beta")]:
            clock.shift(timedelta(seconds=60))
            refused = post(f"/status/{slug}/subscribe", {"email": "READER@example.com"}, ip=ip)
            assert refused.status_code == 429
            assert int(refused["Retry-After"]) == window - 60 * (1 + (slug == "beta"))
        assert len(outbox) == 1
        clock.shift(timedelta(seconds=window - 120))
        resent = post("/status/acme/subscribe", {"email": "reader@example.com"}, ip="192.0.2.3")
    assert resent.status_code == 200
    assert len(outbox) == 2
    assert _confirm_path(outbox[0]) == _confirm_path(outbox[1])  # the same link, still valid
    assert Subscriber.objects.count() == 1


def test_the_address_window_holds_for_confirmed_addresses_too(page, post, outbox):
    """Throttled alike whether confirmed or not, so a 429 tells nothing about the address."""
    confirmed(page, "reader@example.com")
    with time_machine.travel(NOW, tick=False):
        first = post("/status/acme/subscribe", {"email": "reader@example.com"})
        second = post("/status/acme/subscribe", {"email": "reader@example.com"}, ip="192.0.2.4")
    assert (first.status_code, second.status_code) == (200, 429)
    assert outbox == []


def test_subscribe_form_partial_posts_an_email_to_the_page_route(page, client):
    html = client.get("/status/acme").content.decode()
    assert 'action="/status/acme/subscribe"' in html
    assert 'type="email" name="email"' in html
    private = make_page(page.organization, "inner", visibility=Visibility.PRIVATE)
    assert "<form" not in render_to_string("statuspages/_subscribe.html", {"page": private})


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_result_pages_escape_the_page_name_and_run_no_inline_script(cast, post, client, outbox):
    page = make_page(cast.org, "acme")
    StatusPage.objects.filter(pk=page.pk).update(name=HOSTILE, title=HOSTILE)
    subscriber = Subscriber.objects.create(page=page, email="reader@example.com")
    responses = [
        post("/status/acme/subscribe", {"email": "new@example.com"}),
        post("/status/acme/subscribe", {"email": "bad"}),
        client.get(f"/status/acme/confirm/{subscriber.token}"),
        client.post(f"/status/acme/confirm/{subscriber.token}"),
        client.get(f"/status/acme/unsubscribe/{subscriber.token}"),
        client.get("/status/acme/unsubscribe/unknown"),
        client.post(f"/status/acme/unsubscribe/{subscriber.token}"),
    ]
    for response in responses:
        html = response.content.decode()
        assert "<script>alert" not in html
        assert "<img" not in html
        assert re.findall(r"<script(?![^>]*\bsrc=)", html) == []
        assert "script-src 'self'" in response["Content-Security-Policy"]
    [mail] = outbox
    assert "<script>alert" not in mail.alternatives[0][0]


def test_a_queued_confirmation_is_dropped_once_confirmed_or_unsubscribed(page, outbox):
    waiting = Subscriber.objects.create(page=page, email="waiting@example.com")
    done = confirmed(page, "done@example.com")
    gone = Subscriber.objects.create(page=page, email="gone@example.com")
    gone_id = gone.pk
    gone.delete()
    sent = [
        send_subscriber_confirmation.delay(str(pk)).get() for pk in (waiting.pk, done.pk, gone_id)
    ]
    assert sent == [True, False, False]
    assert [m.to for m in outbox] == [["waiting@example.com"]]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two subscribes of one address on two connections at once")
def test_one_address_subscribing_twice_at_once_makes_one_subscriber(outbox):
    org, _ = organization_create(name="Acme")
    page = make_page(org, "acme")

    def subscribe(email: str) -> Callable[[], int]:
        def run() -> int:
            service.subscriber_subscribe(page=page, email=email)
            return 200

        return run

    assert race(subscribe("Reader@example.com"), subscribe("reader@EXAMPLE.com")) == [200, 200]
    assert Subscriber.objects.count() == 1
    assert len(outbox) == 2  # the view's address throttle keeps this to one; the row is one
