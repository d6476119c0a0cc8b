"""Incident updates mailed to status page subscribers: once per subscriber per update, in
batches, with RFC 8058 one-click unsubscribe, to confirmed subscribers of public incidents."""

import re
import smtplib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from celery.exceptions import Retry
from django.core.mail.backends.locmem import EmailBackend
from django.test import Client
from django.utils import timezone

from accounts.services import organization_create
from monitoring.models import Endpoint, IncidentUpdate
from statuspages.models import Subscriber, SubscriberMail, Visibility
from statuspages.services.subscribers import (
    _fan_out_one,
    subscriber_mails_fan_out,
    subscriber_mails_send,
)
from statuspages.tasks import send_subscriber_mails
from tests.concurrency import race
from tests.statuspages.subscribing import (
    automatic_incident,
    confirmed,
    declared_incident,
    make_page,
    post_update,
    readable,
)

BASE = "https://healthmon.test"


@pytest.fixture
def endpoint(cast: Any, make_endpoint: Callable[..., Endpoint]) -> Endpoint:
    return make_endpoint(
        cast.project, name="API", target="https://secret-host.internal:8443/health?token=s3cr3t"
    )


def _path(url: str) -> str:
    assert url.startswith(BASE), url
    return url.removeprefix(BASE)


def test_subscribe_confirm_receive_one_click_unsubscribe_then_nothing(
    cast, endpoint, run, outbox, django_capture_on_commit_callbacks
):
    make_page(cast.org, "acme", endpoint)
    browser = Client()
    with django_capture_on_commit_callbacks(execute=True):
        browser.post("/status/acme/subscribe", {"email": "reader@example.com"})
    [confirmation] = outbox
    confirm = re.search(r"https://\S+/confirm/\S+", confirmation.body).group(0)
    assert browser.post(_path(confirm)).status_code == 200

    incident = automatic_incident(endpoint)
    post_update(incident, "We are **looking** into it.")
    assert run() == 1
    [mail] = outbox[1:]
    subscriber = Subscriber.objects.get()
    unsubscribe = f"{BASE}/status/acme/unsubscribe/{subscriber.token}"
    assert mail.to == ["reader@example.com"]
    assert mail.extra_headers["List-Unsubscribe"] == f"<{unsubscribe}>"
    assert mail.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert mail.subject == "[Acme status] API is down: Investigating"
    assert "We are **looking** into it." in mail.body
    assert "<p>We are **looking** into it.</p>" in mail.alternatives[0][0]
    assert unsubscribe in mail.body
    assert f"{BASE}/status/acme" in mail.body

    mail_client = Client(enforce_csrf_checks=True)
    one_click = mail_client.post(
        _path(unsubscribe), "List-Unsubscribe=One-Click", "application/x-www-form-urlencoded"
    )
    assert one_click.status_code == 200
    post_update(incident, "Fixed.", state="resolved")
    assert run() == 0
    assert len(outbox) == 2


def test_each_confirmed_subscriber_gets_one_mail_per_update_in_batches(
    cast, endpoint, run, outbox, settings
):
    settings.STATUS_SUBSCRIBER_BATCH_SIZE = 2
    page = make_page(cast.org, "acme", endpoint)
    for n in range(5):
        confirmed(page, f"r{n}@example.com")
    Subscriber.objects.create(page=page, email="waiting@example.com")  # never confirmed
    update = post_update(automatic_incident(endpoint))
    assert run() == 3  # 5 mails in batches of 2
    assert run() == 0  # claimed: the next beat finds nothing
    assert sorted(m.to[0] for m in outbox) == [f"r{n}@example.com" for n in range(5)]
    assert SubscriberMail.objects.filter(update=update, sent_at__isnull=False).count() == 5
    IncidentUpdate.objects.filter(pk=update.pk).update(subscribers_notified_at=None)
    run()  # even a fan-out made to run again writes no second mail
    assert len(outbox) == 5


def test_a_declared_incident_mails_every_page_showing_any_of_its_endpoints(
    cast, endpoint, make_endpoint, run, outbox
):
    db = make_endpoint(cast.project, name="Database")
    unrelated = make_endpoint(cast.project, name="Docs")
    confirmed(make_page(cast.org, "api", endpoint), "api@example.com")
    confirmed(make_page(cast.org, "both", endpoint, db), "both@example.com")
    confirmed(make_page(cast.org, "docs", unrelated), "docs@example.com")
    confirmed(make_page(cast.org, "inner", db, visibility=Visibility.PRIVATE), "in@example.com")
    post_update(declared_incident(cast.org, endpoint, db, title="Slow logins"))
    run()
    assert sorted(m.to[0] for m in outbox) == ["api@example.com", "both@example.com"]
    assert all(m.subject.endswith("Slow logins: Investigating") for m in outbox)


def test_updates_of_non_public_incidents_are_never_mailed(cast, endpoint, run, outbox):
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    update = post_update(automatic_incident(endpoint, public=False))
    assert run() == 0
    assert outbox == []
    assert not SubscriberMail.objects.exists()
    update.refresh_from_db()
    assert update.subscribers_notified_at is None


def test_updates_not_meant_for_subscribers_and_bare_incidents_send_nothing(
    cast, endpoint, run, outbox
):
    """Opening (or resolving) an automatic incident mails nobody: only posted updates do."""
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    incident = automatic_incident(endpoint)
    post_update(incident, "internal heads-up", notify=False)
    assert run() == 0
    assert outbox == []


def test_another_organizations_subscribers_are_not_mailed(cast, endpoint, run, outbox):
    confirmed(make_page(cast.other_org, "globex"), "globex@example.com")
    confirmed(make_page(cast.org, "acme", endpoint), "acme@example.com")
    post_update(automatic_incident(endpoint))
    run()
    assert [m.to for m in outbox] == [["acme@example.com"]]


def test_mails_carry_nothing_private(cast, endpoint, run, outbox):
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    confirmed(make_page(cast.org, "beta", endpoint), "other-reader@example.com")
    incident = automatic_incident(endpoint)
    incident.cause = "connection refused by 10.1.2.3:5432"
    incident.save(update_fields=["cause"])
    post_update(incident, "Looking.")
    run()
    for mail in outbox:
        whole = readable(mail)
        for secret in ["secret-host", "8443", "s3cr3t", "10.1.2.3", "connection refused"]:
            assert secret not in whole
        assert "other-reader" not in whole if mail.to == ["reader@example.com"] else True
        for member in ["owner@acme.test", "admin@acme.test", "member@acme.test"]:
            assert member not in whole


def test_a_failed_send_is_retried_and_a_sent_mail_never_again(
    cast, endpoint, run, outbox, monkeypatch
):
    page = make_page(cast.org, "acme", endpoint)
    confirmed(page, "a@example.com")
    confirmed(page, "b@example.com")
    real = EmailBackend.send_messages
    failures = {"b@example.com": 1}  # b's first send fails

    def flaky(self: EmailBackend, messages: list[Any]) -> int:
        to = messages[0].to[0]
        if failures.get(to):
            failures[to] -= 1
            raise OSError("connection reset")
        return real(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", flaky)
    post_update(automatic_incident(endpoint))
    with pytest.raises(Retry) as retry:  # eager Celery raises what a worker schedules
        run()
    assert [m.to for m in outbox] == [["a@example.com"]]
    [failed] = retry.value.sig.args[0]
    assert SubscriberMail.objects.get(pk=failed).subscriber.email == "b@example.com"
    assert SubscriberMail.objects.get(pk=failed).sent_at is None  # unclaimed: may go again
    all_ids = list(SubscriberMail.objects.values_list("id", flat=True))
    assert send_subscriber_mails.apply(args=[all_ids]).get() == 1  # the retry (or a duplicate)
    assert sorted(m.to[0] for m in outbox) == ["a@example.com", "b@example.com"]
    assert not SubscriberMail.objects.filter(sent_at__isnull=True).exists()
    assert subscriber_mails_send(mail_ids=all_ids).sent == 0  # sent mails never go again
    assert len(outbox) == 2


def test_a_refused_recipient_is_not_retried(cast, endpoint, run, outbox, monkeypatch):
    confirmed(make_page(cast.org, "acme", endpoint), "gone@example.com")

    def refuse(self: EmailBackend, messages: list[Any]) -> int:
        raise smtplib.SMTPRecipientsRefused({"gone@example.com": (550, b"no such user")})

    monkeypatch.setattr(EmailBackend, "send_messages", refuse)
    post_update(automatic_incident(endpoint))
    run()  # no Retry raised
    assert outbox == []
    assert SubscriberMail.objects.get().sent_at is not None


def test_two_send_workers_interleaved_send_each_mail_once(cast, endpoint, outbox, monkeypatch):
    """Worker B runs while worker A is inside its first send: A's claimed mail is B's to
    skip, and the rest B sends are A's to skip."""
    page = make_page(cast.org, "acme", endpoint)
    for n in range(4):
        confirmed(page, f"r{n}@example.com")
    update = post_update(automatic_incident(endpoint))
    # Its send tasks wait for a commit that never comes in this test's transaction.
    assert _fan_out_one(update.pk, update.created_at) == 1
    ids = list(SubscriberMail.objects.order_by("id").values_list("id", flat=True))
    real = EmailBackend.send_messages
    outcomes: list[Any] = []
    b_started = False

    def send_and_let_b_in(self: EmailBackend, messages: list[Any]) -> int:
        nonlocal b_started
        if not b_started:
            b_started = True
            outcomes.append(subscriber_mails_send(mail_ids=ids))  # worker B, mid-send of A
        return real(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", send_and_let_b_in)
    a = subscriber_mails_send(mail_ids=ids)
    assert (a.sent, outcomes[0].sent) == (1, 3)
    assert sorted(m.to[0] for m in outbox) == [f"r{n}@example.com" for n in range(4)]


def test_sending_a_mail_decrypts_no_endpoints_target(cast, endpoint, outbox, request):
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    update = post_update(automatic_incident(endpoint))
    assert _fan_out_one(update.pk, update.created_at) == 1
    request.getfixturevalue("endpoint_secrets_unread")  # from here on
    mail_ids = list(SubscriberMail.objects.values_list("pk", flat=True))
    assert subscriber_mails_send(mail_ids=mail_ids).sent == 1
    assert "API" in outbox[0].subject  # the endpoint's name, read without its secrets


def test_a_second_fan_out_of_one_update_claims_nothing(cast, endpoint):
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    update = post_update(automatic_incident(endpoint))
    assert _fan_out_one(update.pk, update.created_at) == 1
    assert _fan_out_one(update.pk, update.created_at) == 0
    assert SubscriberMail.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two fan-outs on two connections at the same moment")
def test_two_fan_outs_racing_write_and_send_each_mail_once(outbox):
    org, project = organization_create(name="Acme")
    endpoint = Endpoint.objects.create(
        project=project, name="API", type="http", target="https://example.com/health"
    )
    page = make_page(org, "acme", endpoint)
    for n in range(30):
        confirmed(page, f"r{n}@example.com")
    for n in range(3):
        incident = declared_incident(org, endpoint, title=f"Incident {n}")
        post_update(automatic_incident(endpoint) if n == 0 else incident)
    batches: list[int] = []

    def fan_out() -> int:
        batches.append(subscriber_mails_fan_out())
        return 0

    race(fan_out, fan_out, fan_out)
    assert SubscriberMail.objects.count() == 90
    assert sum(batches) == 3  # each update claimed by one fan-out: one batch of 30 each
    assert len(outbox) == 90
    assert len({(m.to[0], m.subject) for m in outbox}) == 90


def test_an_incident_hidden_after_its_update_was_picked_is_not_mailed(cast, endpoint):
    confirmed(make_page(cast.org, "acme", endpoint), "reader@example.com")
    update = post_update(automatic_incident(endpoint, public=False))
    assert _fan_out_one(update.pk, update.created_at) == 0
    update.refresh_from_db()
    assert update.subscribers_notified_at is None  # mailed if it is made public later
    assert not SubscriberMail.objects.exists()


def test_a_batch_lost_before_the_broker_is_queued_again_and_sent_once(
    cast, endpoint, outbox, django_capture_on_commit_callbacks
):
    page = make_page(cast.org, "acme", endpoint)
    confirmed(page, "reader@example.com")
    post_update(automatic_incident(endpoint))
    start = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):  # the broker never got it
        assert subscriber_mails_fan_out(now=start) == 1
    assert outbox == []
    [mail] = SubscriberMail.objects.all()
    assert mail.sent_at is None

    for minutes, batches in [(10, 0), (31, 1), (62, 0)]:  # not yet; again; sent by then
        with django_capture_on_commit_callbacks(execute=True):
            assert subscriber_mails_fan_out(now=start + timedelta(minutes=minutes)) == batches
    assert [m.to for m in outbox] == [["reader@example.com"]]


def test_a_mail_that_keeps_failing_is_queued_again_each_half_hour_for_a_day(
    cast, endpoint, django_capture_on_commit_callbacks
):
    page = make_page(cast.org, "acme", endpoint)
    confirmed(page, "reader@example.com")
    post_update(automatic_incident(endpoint))
    start = timezone.now()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        subscriber_mails_fan_out(now=start)
        subscriber_mails_fan_out(now=start + timedelta(minutes=31))
        subscriber_mails_fan_out(now=start + timedelta(minutes=40))  # queued 9 min ago
        subscriber_mails_fan_out(now=start + timedelta(days=1, minutes=1))  # too old
    assert len(queued) == 2


def test_an_update_hidden_or_a_page_made_private_after_the_fan_out_is_not_mailed(
    cast, endpoint, outbox, django_capture_on_commit_callbacks
):
    hidden_page = make_page(cast.org, "acme", endpoint)
    closed_page = make_page(cast.org, "beta", endpoint)
    confirmed(hidden_page, "one@example.com")
    confirmed(closed_page, "two@example.com")
    incident = automatic_incident(endpoint)
    post_update(incident)
    with django_capture_on_commit_callbacks(execute=False):  # queued, not sent yet
        subscriber_mails_fan_out()
    closed_page.visibility = Visibility.PRIVATE
    closed_page.save(update_fields=["visibility"])
    ids = list(SubscriberMail.objects.values_list("id", flat=True))

    assert subscriber_mails_send(mail_ids=ids).sent == 1  # the page made private: no mail
    incident.public = False
    incident.save(update_fields=["public"])
    SubscriberMail.objects.update(sent_at=None)
    assert subscriber_mails_send(mail_ids=ids).sent == 0  # the incident hidden: none at all
    assert [m.to for m in outbox] == [["one@example.com"]]
