"""Status page subscribers: double opt-in by mail, one-click unsubscribe, and incident
updates and maintenance notices (`statuspages.services.notices`) mailed once to each
confirmed subscriber.

Mailing runs in two steps, each safe against a second worker doing the same at once. The
fan-out (beat, every few seconds) claims an update with a conditional UPDATE of its
`subscribers_notified_at`, and in the same transaction writes one `SubscriberMail` per
confirmed subscriber (the unique pair makes a second write a no-op). Send tasks then claim
each mail row (`sent_at` from null to now) before sending it: a mail claimed by one worker is
skipped by every other, and a send that fails clears the claim so the row can be retried. A
worker killed between claim and send loses that one mail rather than ever sending it twice.
"""

import hashlib
import logging
import math
import smtplib
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Lower
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.models import normalize_email
from alerts.models import MaintenanceWindow
from healthmon.encryption import encrypted_fields
from healthmon.errors import InvalidInput
from healthmon.queue import enqueue_on_commit
from monitoring.models import Endpoint, Incident, IncidentUpdate
from statuspages.models import StatusPage, Subscriber, SubscriberMail, Visibility
from statuspages.services.notices import maintenance_notice_text, maintenance_notices_fan_out

logger = logging.getLogger(__name__)

# The names `statuspages.tasks` registers its tasks under (the tasks call these services).
SEND_CONFIRMATION_TASK = "statuspages.tasks.send_subscriber_confirmation"
SEND_MAILS_TASK = "statuspages.tasks.send_subscriber_mails"

# Updates one fan-out run claims; the next run, seconds later, takes the rest.
FANOUT_UPDATES_PER_RUN = 20
# A mail queued this long ago and still unsent is queued again, for a day at most: so a
# batch lost on its way to the broker is sent late rather than never, and a mail that keeps
# failing is tried again every half hour, not every beat.
REQUEUE_AFTER = timedelta(minutes=30)
REQUEUE_WITHIN = timedelta(days=1)
REQUEUE_PER_RUN = 1000
MAX_EMAIL_LENGTH = 254
# Subscribe requests one client address may make per window (a fixed window per address).
SUBSCRIBE_IP_LIMIT = 10
SUBSCRIBE_IP_WINDOW_SECONDS = 600
# One confirmation request per address (any page) per window: however many pages or client
# addresses ask, an inbox gets at most one confirmation mail in it.
SUBSCRIBE_ADDRESS_WINDOW_SECONDS = 600
BAD_EMAIL = "Enter a valid email address."


def subscriber_batch_size() -> int:
    """Mails one send task carries (`STATUS_SUBSCRIBER_BATCH_SIZE`, default 100)."""
    return int(settings.STATUS_SUBSCRIBER_BATCH_SIZE)


def _clean_email(email: str) -> str:
    """The address lowercased and trimmed, or InvalidInput naming the field."""
    address = normalize_email(email)
    try:
        if not address or len(address) > MAX_EMAIL_LENGTH:
            raise DjangoValidationError(BAD_EMAIL)
        validate_email(address)
    except DjangoValidationError:
        raise InvalidInput({"email": [BAD_EMAIL]}) from None
    return address


def subscriber_email_clean(*, email: str) -> str:
    """Check a subscriber's address; the normalised form, or InvalidInput naming `email`."""
    return _clean_email(email)


def subscribe_ip_wait(*, ip: str) -> int | None:
    """Count a subscribe request from a client address; the seconds to wait when it is
    over the limit, else None."""
    now = time.time()
    window = int(now // SUBSCRIBE_IP_WINDOW_SECONDS)
    key = f"throttle:subscribe:ip:{ip}:{window}"
    if cache.add(key, 1, timeout=SUBSCRIBE_IP_WINDOW_SECONDS + 1):
        return None
    try:
        count = int(cache.incr(key))
    except ValueError:  # expired between the two calls
        cache.add(key, 1, timeout=SUBSCRIBE_IP_WINDOW_SECONDS + 1)
        return None
    if count <= SUBSCRIBE_IP_LIMIT:
        return None
    return max(1, math.ceil((window + 1) * SUBSCRIBE_IP_WINDOW_SECONDS - now))


def subscribe_address_wait(*, email: str) -> int | None:
    """Take the address's one request of the window; the seconds until the window ends
    when it is taken already, else None. Atomic (cache add), so two requests at once for
    one address cannot both pass."""
    now = time.time()
    digest = hashlib.sha256(normalize_email(email).encode()).hexdigest()[:32]
    key = f"throttle:subscribe:address:{digest}"
    ends = now + SUBSCRIBE_ADDRESS_WINDOW_SECONDS
    if cache.add(key, ends, timeout=SUBSCRIBE_ADDRESS_WINDOW_SECONDS):
        return None
    held = cache.get(key)
    if held is not None and float(held) <= now:
        # Over by our clock though the store still keeps it (its clock differs): take the
        # next window. Two requests racing exactly here may both pass; the store's own
        # expiry makes this path rare outside a moved clock.
        cache.delete(key)
        if cache.add(key, ends, timeout=SUBSCRIBE_ADDRESS_WINDOW_SECONDS):
            return None
        held = cache.get(key)
    return max(1, math.ceil(float(held) - now)) if held is not None else 1


def _find(page: StatusPage, address: str) -> Subscriber | None:
    """The page's subscriber with this address, whatever case it was stored in."""
    # Lower("email") is what the unique index holds, so PostgreSQL finds it through it.
    return Subscriber.objects.alias(lower=Lower("email")).filter(page=page, lower=address).first()


@transaction.atomic
def subscriber_subscribe(*, page: StatusPage, email: str) -> Subscriber:
    """Record an address for a page's incident updates and mail it a confirmation link
    (after commit), unless it has confirmed already: then nothing is sent, and the caller
    answers alike, so the answer never tells whether an address is subscribed."""
    address = _clean_email(email)
    subscriber = _find(page, address)
    if subscriber is None:
        try:
            with transaction.atomic():
                subscriber = Subscriber.objects.create(page=page, email=address)
        except IntegrityError:  # the same address subscribed at the same moment
            subscriber = _find(page, address)
            if subscriber is None:
                raise
    if subscriber.confirmed_at is None:
        enqueue_on_commit(SEND_CONFIRMATION_TASK, str(subscriber.pk))
    return subscriber


def _by_token(slug: str, token: str) -> Subscriber | None:
    """The subscriber of the page `slug` holding this link token, with its page; a token
    of another page is unknown. The page's visibility is not asked: the token, mailed to
    the address, is the credential (a mail client has no page session or password)."""
    if not token or len(token) > 64:
        return None
    found = Subscriber.objects.select_related("page").filter(page__slug=slug, token=token)
    return found.first()


def subscriber_by_token(*, slug: str, token: str) -> Subscriber | None:
    """The subscriber whose links carry `token` on page `slug`, or None."""
    return _by_token(slug, token)


@transaction.atomic
def subscriber_confirm(*, slug: str, token: str) -> Subscriber | None:
    """Confirm the address of the link's subscriber (idempotent); None for an unknown link."""
    subscriber = _by_token(slug, token)
    if subscriber is None:
        return None
    if subscriber.confirmed_at is None:
        subscriber.confirmed_at = timezone.now()
        subscriber.save(update_fields=["confirmed_at"])
    return subscriber


@transaction.atomic
def subscriber_unsubscribe(*, slug: str, token: str) -> StatusPage | None:
    """Forget the link's subscriber and its unsent mails; its page, or None for an
    unknown link."""
    subscriber = _by_token(slug, token)
    if subscriber is None:
        return None
    subscriber.delete()
    return subscriber.page


# --- Fan-out -------------------------------------------------------------------------------


def _due_updates() -> "list[uuid.UUID]":
    """Updates of public incidents waiting to be mailed, oldest first."""
    due = IncidentUpdate.objects.filter(
        notify_subscribers=True, subscribers_notified_at__isnull=True, incident__public=True
    ).order_by("created_at", "id")
    return list(due.values_list("id", flat=True)[:FANOUT_UPDATES_PER_RUN])


def _audience(incident: Incident) -> "list[uuid.UUID]":
    """Confirmed subscribers of every page, private ones aside, that shows any endpoint of
    the incident: the measured one, or those a declared incident names."""
    shown = Q(page__components__endpoint__declared_incidents=incident)
    if incident.endpoint_id is not None:
        shown |= Q(page__components__endpoint_id=incident.endpoint_id)
    subscribers = Subscriber.objects.filter(
        shown,
        confirmed_at__isnull=False,
        page__organization_id=incident.organization_id,
    ).exclude(page__visibility=Visibility.PRIVATE)
    return list(subscribers.values_list("id", flat=True).distinct())


@transaction.atomic
def _fan_out_one(update_id: uuid.UUID, now: datetime) -> int:
    """Claim one update and write its mails; 0 when another run claimed it first."""
    # Conditions on the update's own row only: PostgreSQL re-checks those against the row a
    # racing claim committed, but not a join's subquery (both claims would win).
    claimed = IncidentUpdate.objects.filter(
        pk=update_id, notify_subscribers=True, subscribers_notified_at__isnull=True
    ).update(subscribers_notified_at=now)
    if not claimed:
        return 0
    update = IncidentUpdate.objects.select_related("incident").get(pk=update_id)
    if not update.incident.public:  # hidden since it was picked: leave it unclaimed
        transaction.set_rollback(True)
        return 0
    rows = [SubscriberMail(subscriber_id=s, update=update) for s in _audience(update.incident)]
    SubscriberMail.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    # Ids read back: ignore_conflicts gives none, and these are the rows that exist.
    ids = list(
        SubscriberMail.objects.filter(update=update, sent_at__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)
    )
    return _queue_batches(ids, now)


def _queue_batches(ids: list[int], now: datetime) -> int:
    """Queue send tasks for mail ids (once the current transaction commits); the count."""
    if ids:
        SubscriberMail.objects.filter(pk__in=ids).update(queued_at=now)
    size = subscriber_batch_size()
    for start in range(0, len(ids), size):
        enqueue_on_commit(SEND_MAILS_TASK, ids[start : start + size])
    return math.ceil(len(ids) / size) if ids else 0


def subscriber_mails_fan_out(*, now: datetime | None = None) -> int:
    """Turn the public incident updates that ask for it, and the maintenance windows not
    announced yet, into one mail per confirmed subscriber, queued in batches; returns the
    batches queued. Safe to run concurrently."""
    now = now or timezone.now()
    batches = sum(_fan_out_one(update_id, now) for update_id in _due_updates())
    batches += sum(_queue_batches(ids, now) for ids in maintenance_notices_fan_out(now=now))
    return batches + _unsent_requeue(now)


@transaction.atomic
def _unsent_requeue(now: datetime) -> int:
    """Queue again the mails queued over REQUEUE_AFTER ago and still unsent (made within
    REQUEUE_WITHIN); rows another run holds are skipped, so each is queued once a round."""
    cutoff = now - REQUEUE_AFTER
    stale = SubscriberMail.objects.filter(
        Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True, created_at__lt=cutoff),
        sent_at__isnull=True,
        created_at__gte=now - REQUEUE_WITHIN,
    )
    ids = list(
        stale.select_for_update(skip_locked=True)
        .order_by("id")
        .values_list("id", flat=True)[:REQUEUE_PER_RUN]
    )
    if ids:
        logger.warning("subscriber mails queued again", extra={"count": len(ids)})
    return _queue_batches(ids, now)


# --- Sending -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendOutcome:
    """What one send batch did: mails sent, and the ids whose send failed (retry those)."""

    sent: int
    failed: list[int]


def subscriber_links(subscriber: Subscriber) -> dict[str, str]:
    """The page, confirm and unsubscribe links of a subscriber (origin from settings)."""
    slug, token = subscriber.page.slug, subscriber.token
    return {
        # The public page's route belongs to its own module; its path is the contract's.
        "page_url": f"{settings.WEB_BASE_URL}/status/{slug}",
        "confirm_url": settings.WEB_BASE_URL + reverse("status-confirm", args=[slug, token]),
        "unsubscribe_url": settings.WEB_BASE_URL
        + reverse("status-unsubscribe", args=[slug, token]),
    }


def _render(template: str, context: Mapping[str, object]) -> tuple[str, str, str]:
    """Subject (one line: headers carry no newlines), text and HTML of a mail."""
    subject = " ".join(render_to_string(f"emails/{template}_subject.txt", context).split())
    text = render_to_string(f"emails/{template}.txt", context)
    return subject, text, render_to_string(f"emails/{template}.html", context)


def subscriber_confirmation_send(*, subscriber_id: uuid.UUID) -> bool:
    """Mail the confirmation link to a subscriber not confirmed yet; False when there is
    none to send (unsubscribed or confirmed since it was queued)."""
    subscriber = Subscriber.objects.select_related("page").filter(pk=subscriber_id).first()
    if subscriber is None or subscriber.confirmed_at is not None:
        return False
    context = {"page_name": subscriber.page.name, **subscriber_links(subscriber)}
    subject, text, html = _render("status_confirm", context)
    message = EmailMultiAlternatives(subject=subject, body=text, to=[subscriber.email])
    message.attach_alternative(html, "text/html")
    message.send()
    return True


def _incident_title(incident: Incident) -> str:
    """A declared incident's title; a measured one's words when nobody titled it."""
    if incident.title:
        return incident.title
    return f"{incident.endpoint.name} is down" if incident.endpoint else "Incident"


def _update_context(update: IncidentUpdate) -> tuple[str, dict[str, object]]:
    """The template and context of an incident update mail."""
    return "status_update", {
        "incident_title": _incident_title(update.incident),
        "state": update.get_state_display(),
        "message": update.message,
        "message_html": update.message_html,
    }


def _notice_context(
    window: MaintenanceWindow, page: StatusPage
) -> tuple[str, dict[str, object]] | None:
    """The template and context of a maintenance notice; None when there is nothing to
    tell any more (see `maintenance_notice_text`)."""
    notice = maintenance_notice_text(window=window, page=page, now=timezone.now())
    return None if notice is None else ("status_maintenance", {"notice": notice})


def _still_tellable(update: IncidentUpdate, page: StatusPage) -> bool:
    """Whether an update mailed later is still for this page's readers: its incident public
    and the page not private (either may have changed since the fan-out)."""
    return update.incident.public and page.visibility != Visibility.PRIVATE


def _message(mail: SubscriberMail) -> EmailMultiAlternatives | None:
    """The mail of one update or notice to one subscriber, with RFC 8058 one-click
    unsubscribe; None when there is nothing left to tell (a notice of a window that no
    longer concerns the page, an update of an incident hidden or a page made private since
    the fan-out)."""
    subscriber = mail.subscriber
    found = None
    if mail.maintenance is not None:
        found = _notice_context(mail.maintenance, subscriber.page)
    elif mail.update is not None and _still_tellable(mail.update, subscriber.page):
        found = _update_context(mail.update)
    if found is None:
        return None
    template, extra = found
    links = subscriber_links(subscriber)
    context = {"page_name": subscriber.page.name, **extra, **links}
    subject, text, html = _render(template, context)
    headers = {
        "List-Unsubscribe": f"<{links['unsubscribe_url']}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        "Auto-Submitted": "auto-generated",
    }
    message = EmailMultiAlternatives(
        subject=subject, body=text, to=[subscriber.email], headers=headers
    )
    message.attach_alternative(html, "text/html")
    return message


def _claim(mail_id: int) -> bool:
    """Take one mail for sending; False when another worker has it, or it went out."""
    return bool(
        SubscriberMail.objects.filter(pk=mail_id, sent_at__isnull=True).update(
            sent_at=timezone.now()
        )
    )


def subscriber_mails_send(*, mail_ids: list[int]) -> SendOutcome:
    """Send the given update and notice mails not sent yet, each claimed first so no two
    workers send one; a failed send is unclaimed and reported for retry. A refused
    recipient is not retried (it would be refused again), nor is a notice with nothing
    left to tell (it stays claimed, unsent)."""
    mails = (
        SubscriberMail.objects.filter(pk__in=mail_ids, sent_at__isnull=True)
        .select_related("subscriber__page", "update__incident__endpoint", "maintenance")
        # A mail names the endpoint: its target and config are not decrypted for that.
        .defer(*encrypted_fields(Endpoint, "update__incident__endpoint"))
        .order_by("id")
    )
    sent, failed = 0, []
    connection = get_connection()
    with connection:
        for mail in mails:
            if not _claim(mail.pk):
                continue
            try:
                message = _message(mail)
                if message is None:
                    continue
                connection.send_messages([message])
                sent += 1
            except smtplib.SMTPRecipientsRefused:
                logger.warning("subscriber mail refused", extra={"mail_id": mail.pk})
            except (OSError, smtplib.SMTPException):
                SubscriberMail.objects.filter(pk=mail.pk).update(sent_at=None)
                failed.append(mail.pk)
    return SendOutcome(sent=sent, failed=failed)
