"""Maintenance notices: each maintenance window announced once to the confirmed subscribers
of every page, private ones aside, that shows a component it covers.

The fan-out (`subscriber_mails_fan_out`, the beat task of incident updates) claims a window
by inserting its `MaintenanceNotice`: the window is unique there, so of two runs at once one
insert wins and the other fails on the unique key (PostgreSQL makes it wait for the winner's
commit first). In the same transaction the winner writes one `SubscriberMail` per confirmed
subscriber (unique per subscriber and window); the mails go out like update mails.

A window is announced once, when a fan-out first sees it, if it has not ended then (a weekly
window never ends). A window edited later is not announced again, and neither are pages or
subscribers that come to it later: the page itself lists upcoming maintenance. Every due
window is claimed, even one covering nothing on any page, so none is looked at twice.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q

from alerts.models import MaintenanceWindow, load_scopes, may_overlap
from healthmon.intervals import Interval
from monitoring.models import Endpoint
from statuspages.models import (
    Component,
    MaintenanceNotice,
    StatusPage,
    Subscriber,
    SubscriberMail,
    Visibility,
)

# Windows one fan-out run claims; the next run, seconds later, takes the rest.
NOTICE_WINDOWS_PER_RUN = 20
DEFAULT_NAME = "Scheduled maintenance"
RECURRENCE_WORDS = {"FREQ=WEEKLY": "every week"}


def _due_windows(now: datetime) -> "list[uuid.UUID]":
    """Windows not announced yet that have not ended, oldest first."""
    announced = MaintenanceNotice.objects.filter(window_id=OuterRef("pk"))
    due = (
        MaintenanceWindow.objects.filter(~Exists(announced))
        .filter(may_overlap(now))
        .order_by("created_at", "id")
    )
    return list(due.values_list("id", flat=True)[:NOTICE_WINDOWS_PER_RUN])


def _covered(window: MaintenanceWindow, pages: "Q") -> "dict[uuid.UUID, list[str]]":
    """Per page matching `pages`, the names of its components the window covers, in page
    order (endpoints of another organization left out, as the page leaves them out).
    `window` has its scopes loaded."""
    rows = (
        Component.objects.filter(pages, endpoint__project__organization_id=window.organization_id)
        .order_by("page_id", "section__position", "section_id", "position", "id")
        .values_list("page_id", "endpoint_id", "endpoint__project_id", "endpoint__name")
    )
    found: dict[uuid.UUID, list[str]] = {}
    for page_id, endpoint_id, project_id, name in rows:
        if window.covers(Endpoint(id=endpoint_id, project_id=project_id)):
            found.setdefault(page_id, []).append(name)
    return found


def _claim(window_id: uuid.UUID, now: datetime) -> bool:
    """Insert the window's notice; False when another run holds or made it."""
    try:
        with transaction.atomic():
            MaintenanceNotice.objects.create(window_id=window_id, created_at=now)
    except IntegrityError:
        return False
    return True


@transaction.atomic
def _announce(window_id: uuid.UUID, now: datetime) -> "list[int]":
    """Claim one window and write its mails; the ids of its unsent mails, none when
    another run claimed it first."""
    if not _claim(window_id, now):
        return []
    window = MaintenanceWindow.objects.filter(pk=window_id).first()
    if window is None:  # deleted since it was picked (its notice goes with it)
        return []
    load_scopes([window])
    shown = Q(page__organization_id=window.organization_id) & ~Q(
        page__visibility=Visibility.PRIVATE
    )
    pages = list(_covered(window, shown))
    audience = Subscriber.objects.filter(page_id__in=pages, confirmed_at__isnull=False)
    ids = audience.values_list("id", flat=True)
    rows = [SubscriberMail(subscriber_id=pk, maintenance=window) for pk in ids]
    SubscriberMail.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    # Ids read back: ignore_conflicts gives none, and these are the rows that exist.
    unsent = SubscriberMail.objects.filter(maintenance=window, sent_at__isnull=True)
    return list(unsent.order_by("id").values_list("id", flat=True))


def maintenance_notices_fan_out(*, now: datetime) -> "list[list[int]]":
    """Claim each window not announced yet that has not ended, and write one mail per
    confirmed subscriber of each non-private page showing a component it covers; per
    window, the ids of its mails to send. Safe to run concurrently."""
    return [ids for ids in (_announce(pk, now) for pk in _due_windows(now)) if ids]


@dataclass(frozen=True)
class NoticeText:
    """What a notice tells: the window's name, when, how it repeats, what it affects."""

    name: str
    starts_at: datetime
    ends_at: datetime
    repeats: str
    components: list[str]


def _next_occurrence(window: MaintenanceWindow, now: datetime) -> Interval | None:
    """The occurrence under way at `now`, else the next to start; None once it ended."""
    if not window.rrule:
        return (window.starts_at, window.ends_at) if window.ends_at > now else None
    start = window.next_start(now) or now
    found = window.occurrences(now, max(start, now) + timedelta(microseconds=1))
    return found[0] if found else None


def _repeats(window: MaintenanceWindow) -> str:
    """How a window repeats, in words ("" once): "every week", or its rule and zone."""
    if not window.rrule:
        return ""
    return RECURRENCE_WORDS.get(window.rrule) or f"{window.rrule} ({window.timezone})"


def maintenance_notice_text(
    *, window: MaintenanceWindow, page: StatusPage, now: datetime
) -> NoticeText | None:
    """The notice of `window` on `page` as it stands now: its next occurrence (the one
    under way, or the next to start) and the page's components it covers; None when there
    is nothing to tell (the window ended, the page turned private, or it covers nothing on
    the page any more)."""
    if page.visibility == Visibility.PRIVATE:
        return None
    load_scopes([window])
    components = _covered(window, Q(page=page)).get(page.pk, [])
    occurrence = _next_occurrence(window, now)
    if not components or occurrence is None:
        return None
    starts_at, ends_at = occurrence
    return NoticeText(
        name=window.name or DEFAULT_NAME,
        starts_at=starts_at,
        ends_at=ends_at,
        repeats=_repeats(window),
        components=components,
    )
