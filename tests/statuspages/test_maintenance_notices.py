"""Maintenance notices mailed to status page subscribers: one per window to each confirmed
subscriber of each non-private page showing a component the window covers, with RFC 8058
one-click unsubscribe, and never twice."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Project
from accounts.services import organization_create
from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint
from statuspages.models import MaintenanceNotice, Subscriber, SubscriberMail, Visibility
from statuspages.services.subscribers import subscriber_mails_fan_out, subscriber_mails_send
from tests.concurrency import race
from tests.statuspages.subscribing import (
    automatic_incident,
    confirmed,
    make_page,
    post_update,
    readable,
)

BASE = "https://healthmon.test"


@pytest.fixture
def api(cast: Any, make_endpoint: Callable[..., Endpoint]) -> Endpoint:
    return make_endpoint(
        cast.project, name="API", target="https://secret-host.internal:8443/health?token=s3cr3t"
    )


@pytest.fixture
def web(cast: Any, make_endpoint: Callable[..., Endpoint]) -> Endpoint:
    return make_endpoint(cast.project, name="Web", target="https://web-host.internal/")


def window(
    organization: Any,
    *,
    name: str = "Database upgrade",
    starts_at: datetime | None = None,
    hours: int = 2,
    recurrence: str = "",
    endpoints: tuple[Endpoint, ...] = (),
    projects: tuple[Project, ...] = (),
) -> MaintenanceWindow:
    """A window of `organization` (written directly: its service belongs to `alerts`)."""
    starts_at = starts_at or datetime(2030, 3, 5, 2, 0, tzinfo=UTC)
    made = MaintenanceWindow.objects.create(
        organization=organization,
        name=name,
        starts_at=starts_at,
        ends_at=starts_at + timedelta(hours=hours),
        recurrence=recurrence,
    )
    made.endpoints.set(endpoints)
    made.projects.set(projects)
    return made


def test_a_window_covering_a_component_is_announced_once_to_each_confirmed_subscriber(
    cast, api, web, run, outbox
):
    page = make_page(cast.org, "acme", api, web)
    for n in range(3):
        confirmed(page, f"r{n}@example.com")
    Subscriber.objects.create(page=page, email="waiting@example.com")  # never confirmed
    upgrade = window(cast.org, endpoints=(api,))
    assert run() == 1
    assert sorted(m.to[0] for m in outbox) == ["r0@example.com", "r1@example.com", "r2@example.com"]
    mail = next(m for m in outbox if m.to == ["r0@example.com"])
    subscriber = Subscriber.objects.get(email="r0@example.com")
    unsubscribe = f"{BASE}/status/acme/unsubscribe/{subscriber.token}"
    assert mail.extra_headers["List-Unsubscribe"] == f"<{unsubscribe}>"
    assert mail.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert mail.subject == "[Acme status] Maintenance: Database upgrade"
    assert "When: Tue 5 Mar 2030, 02:00 UTC to Tue 5 Mar 2030, 04:00 UTC" in mail.body
    assert "Affects: API\n" in mail.body  # the page's components it covers, Web not
    assert "Repeats" not in mail.body
    assert unsubscribe in mail.body
    assert f"Status page: {BASE}/status/acme\n" in mail.body
    html = mail.alternatives[0][0]
    assert "<li>API</li>" in html
    assert "Web" not in html
    assert unsubscribe in html
    assert SubscriberMail.objects.filter(maintenance=upgrade, sent_at__isnull=False).count() == 3

    assert run() == 0  # claimed: the next beat announces nothing
    upgrade.name = "Database upgrade, moved"
    upgrade.ends_at += timedelta(hours=1)
    upgrade.save()
    assert run() == 0  # a changed window is not announced again
    MaintenanceNotice.objects.all().delete()
    run()  # even a fan-out made to claim it again writes no second mail
    assert len(outbox) == 3


def test_a_weekly_unnamed_window_tells_its_next_occurrence_and_that_it_repeats(
    cast, api, run, outbox
):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    first = (timezone.now() - timedelta(days=20)).replace(microsecond=0)
    window(cast.org, name="", starts_at=first, recurrence="weekly", projects=(cast.project,))
    run()
    [mail] = outbox
    assert mail.subject == "[Acme status] Maintenance: Scheduled maintenance"
    upcoming = first + timedelta(days=21)
    assert f"Next: {upcoming:%a} {upcoming.day} {upcoming:%b %Y, %H:%M} UTC" in mail.body
    assert "Repeats: every week" in mail.body
    assert "Affects: API" in mail.body


def test_a_window_for_the_whole_organization_lists_every_component_in_page_order(
    cast, api, web, run, outbox
):
    confirmed(make_page(cast.org, "acme", web, api), "reader@example.com")
    window(cast.org)
    run()
    [mail] = outbox
    assert "Affects: Web, API\n" in mail.body


def test_private_pages_and_pages_showing_nothing_it_covers_get_no_notice(
    cast, api, web, run, outbox
):
    confirmed(make_page(cast.org, "inner", api, visibility=Visibility.PRIVATE), "in@example.com")
    confirmed(make_page(cast.org, "web", web), "web@example.com")
    confirmed(make_page(cast.org, "locked", api, visibility=Visibility.PASSWORD), "pw@example.com")
    upgrade = window(cast.org, endpoints=(api,))
    run()
    assert [m.to for m in outbox] == [["pw@example.com"]]
    assert list(SubscriberMail.objects.values_list("subscriber__email", flat=True)) == [
        "pw@example.com"
    ]
    assert MaintenanceNotice.objects.filter(window=upgrade).exists()


def test_a_window_covering_nothing_on_any_page_is_claimed_and_not_announced_later(
    cast, api, web, run, outbox
):
    page = make_page(cast.org, "acme", web)
    confirmed(page, "reader@example.com")
    upgrade = window(cast.org, endpoints=(api,))
    assert run() == 0
    assert MaintenanceNotice.objects.filter(window=upgrade).exists()
    upgrade.endpoints.add(web)  # changed to cover the page: once per window, not again
    assert run() == 0
    assert outbox == []


def test_ended_windows_are_not_announced(cast, api, run, outbox):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    past = window(cast.org, starts_at=timezone.now() - timedelta(hours=3))
    assert run() == 0
    assert outbox == []
    assert not MaintenanceNotice.objects.filter(window=past).exists()


def test_a_window_under_way_is_announced(cast, api, run, outbox):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    window(cast.org, starts_at=timezone.now() - timedelta(hours=1))
    run()
    assert len(outbox) == 1


def test_another_organizations_windows_and_subscribers_are_left_alone(
    cast, api, make_endpoint, run, outbox
):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    theirs = make_endpoint(cast.other_project, name="Theirs")
    confirmed(make_page(cast.other_org, "other", theirs), "other@example.com")
    window(cast.other_org)
    run()
    assert [m.to for m in outbox] == [["other@example.com"]]


def test_notices_carry_nothing_private(cast, api, run, outbox):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    confirmed(make_page(cast.org, "beta", api), "other-reader@example.com")
    window(cast.org, endpoints=(api,))
    run()
    assert len(outbox) == 2
    for mail in outbox:
        whole = readable(mail)
        for secret in ["secret-host", "8443", "s3cr3t", "internal"]:
            assert secret not in whole
        other = "other-reader" if mail.to == ["reader@example.com"] else "reader@example.com"
        assert other not in whole.replace(mail.to[0], "")
        for member in [cast.owner.email, cast.admin.email, cast.member.email]:
            assert member not in whole


def test_updates_and_notices_go_out_in_one_beat(cast, api, run, outbox):
    confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    post_update(automatic_incident(api))
    window(cast.org)
    assert run() == 2
    assert sorted(m.subject for m in outbox) == [
        "[Acme status] API is down: Investigating",
        "[Acme status] Maintenance: Database upgrade",
    ]


def test_a_notice_with_nothing_left_to_tell_is_not_sent(cast, api, outbox):
    page = make_page(cast.org, "acme", api)
    confirmed(page, "reader@example.com")
    window(cast.org)
    subscriber_mails_fan_out()  # the mails written; their send is queued on commit
    page.visibility = Visibility.PRIVATE
    page.save(update_fields=["visibility"])
    outcome = subscriber_mails_send(
        mail_ids=list(SubscriberMail.objects.values_list("pk", flat=True))
    )
    assert outcome.sent == 0
    assert outbox == []


def test_a_mail_is_of_an_update_or_of_a_window_never_both_nor_neither(cast, api):
    subscriber = confirmed(make_page(cast.org, "acme", api), "reader@example.com")
    update = post_update(automatic_incident(api))
    upgrade = window(cast.org)
    with pytest.raises(IntegrityError), transaction.atomic():
        SubscriberMail.objects.create(subscriber=subscriber)
    with pytest.raises(IntegrityError), transaction.atomic():
        SubscriberMail.objects.create(subscriber=subscriber, update=update, maintenance=upgrade)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two fan-outs on two connections at the same moment")
def test_two_fan_outs_racing_announce_each_window_once(outbox):
    org, project = organization_create(name="Acme")
    endpoint = Endpoint.objects.create(
        project=project, name="API", type="http", target="https://example.com/health"
    )
    page = make_page(org, "acme", endpoint)
    for n in range(30):
        confirmed(page, f"r{n}@example.com")
    for n in range(3):
        window(org, name=f"Upgrade {n}")
    batches: list[int] = []

    def fan_out() -> int:
        batches.append(subscriber_mails_fan_out())
        return 0

    race(fan_out, fan_out, fan_out)
    assert MaintenanceNotice.objects.count() == 3
    assert SubscriberMail.objects.count() == 90
    assert sum(batches) == 3  # each window claimed by one fan-out: one batch of 30 each
    assert len(outbox) == 90
    assert len({(m.to[0], m.subject) for m in outbox}) == 90
