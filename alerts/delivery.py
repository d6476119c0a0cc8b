"""Sending notifications: one attempt at a time, the sweep that sends what is due, and
test sends.

Delivery guarantee: at least once. A delivery's task is queued when the transaction that
wrote it commits, and a beat sweep (`deliveries_dispatch`) sends again whatever is due: a
retry whose back-off is over, or a task the broker lost. A receiver may see an event twice;
its `id` (the same on every attempt) lets it drop the repeat.

Retries wait in the database, not in the broker: a Celery countdown of minutes would sit
in a worker past the Redis visibility timeout and run twice.
"""

import hashlib
import hmac
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.core import mail
from django.core.cache import cache
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import MANAGER_ROLES, User
from alerts import messages
from alerts.apprise_transport import apprise_send
from alerts.errors import TestTooSoon
from alerts.maintenance import maintenance_intervals
from alerts.models import (
    ChannelKind,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NotificationChannel,
    NotificationEvent,
)
from alerts.standard_webhooks import signed_headers
from alerts.transport import MAX_ERROR_LENGTH, Sent, post_json
from healthmon import metrics
from healthmon.encryption import encrypted_fields
from healthmon.logging import get_logger
from healthmon.queue import enqueue_batch
from monitoring.models import ActivityKind, Endpoint, Incident, IncidentActivity

logger = logging.getLogger(__name__)
events = get_logger(__name__)
# The task that makes a delivery's next attempt, queued by this name (`alerts.tasks` registers
# it): the tasks module imports this one, so importing it here would close a circle.
DELIVER_TASK = "alerts.tasks.deliver"
SIGNATURE_HEADER = "X-Healthmon-Signature"
EVENT_HEADER = "X-Healthmon-Event"
ID_HEADER = "X-Healthmon-Delivery"
# How long a queued or running delivery is held before the sweep may send it again.
HOLD = timedelta(seconds=60)
# How far ahead a held opening's maintenance is read; a longer one is read again then.
HELD_HORIZON = timedelta(days=1)


def signature(secret: str, body: bytes) -> str:
    """The `X-Healthmon-Signature` value: `sha256=` and the hex HMAC of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# Deliveries one task carries: a burst of incidents is sent by few tasks, each claiming and
# recording its deliveries in a handful of queries (bench/incident_storm.py).
BATCH_SIZE = 50
# A batch stops sending after this long; what it has not sent goes back to the sweep.
BATCH_BUDGET_SECONDS = 20.0


def queue(deliveries: Sequence[tuple[str, int]]) -> None:
    """Queue tasks for (delivery id, attempts made so far) pairs, BATCH_SIZE a task: each
    makes the next attempt at its deliveries."""
    items = [[pk, attempts] for pk, attempts in deliveries]
    for start in range(0, len(items), BATCH_SIZE):
        enqueue_batch(DELIVER_TASK, items[start : start + BATCH_SIZE])


def deliveries_dispatch(*, now: datetime | None = None, limit: int = 500) -> int:
    """Queue the deliveries that are due (beat runs this every few seconds), holding them
    first so that two sweeps do not queue one twice."""
    now = now or timezone.now()
    with transaction.atomic():
        due = [
            (str(pk), attempts)
            for pk, attempts in Delivery.objects.due(now)
            .order_by("next_attempt_at")
            .select_for_update(skip_locked=True)
            .values_list("pk", "attempts")[:limit]
        ]
        Delivery.objects.filter(pk__in=[pk for pk, _ in due]).update(next_attempt_at=now + HOLD)
        transaction.on_commit(lambda: queue(due))
    return len(due)


def openings_release(*, now: datetime | None = None, limit: int = 500) -> int:
    """Send the openings maintenance held back whose incident outlasted the window: an
    outage still going on when its maintenance ends is told of then. Beat runs this with
    the sweep; returns the openings released.

    A held opening whose endpoint is still in maintenance is looked at again when that
    ends (or in a day, for longer windows); one whose incident resolved meanwhile stays
    suppressed for good, as its resolution is. The incidents are locked while this
    decides, so a resolution written meanwhile either waits and is then sent (its opening
    was) or was written first and the opening stays held back.
    """
    now = now or timezone.now()
    with transaction.atomic():
        held = list(
            Delivery.objects.held(now)
            .order_by("next_attempt_at")
            .select_for_update(skip_locked=True)
            .only("pk", "incident_id", "attempts")[:limit]
        )
        if not held:
            return 0
        incidents: dict[uuid.UUID | None, Incident] = {
            incident.pk: incident
            for incident in Incident.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("endpoint")
            .defer(*encrypted_fields(Endpoint, "endpoint"))  # not decrypted for nothing
            .filter(pk__in={d.incident_id for d in held})
        }
        held = [d for d in held if d.incident_id in incidents]  # the rest: next sweep
        endpoints = list(
            {i.measured_endpoint_id: i.measured_endpoint for i in incidents.values()}.values()
        )
        busy = maintenance_intervals(endpoints, now, now + HELD_HORIZON)
        released: list[Delivery] = []
        later: defaultdict[datetime | None, list[uuid.UUID]] = defaultdict(list)
        for opening in held:
            incident = incidents[opening.incident_id]
            ongoing = busy.get(incident.measured_endpoint_id, [])
            if incident.resolved_at is not None:
                later[None].append(opening.pk)
            elif ongoing and ongoing[0][0] <= now:
                later[ongoing[0][1]].append(opening.pk)
            else:
                released.append(opening)
        for at, pks in later.items():
            Delivery.objects.filter(pk__in=pks).update(next_attempt_at=at)
        Delivery.objects.filter(pk__in=[d.pk for d in released]).update(
            status=DeliveryStatus.PENDING, next_attempt_at=now + HOLD
        )
        pending = [(str(d.pk), d.attempts) for d in released]
        transaction.on_commit(lambda: queue(pending))
    return len(released)


def _recipients(channel: NotificationChannel, delivery: Delivery) -> list[str]:
    addresses = list(channel.config.get("addresses") or [])
    # An incident's endpoint, or the endpoint of an event about no incident (a certificate).
    about = (
        Q(incidents=delivery.incident_id) if delivery.incident_id else Q(pk=delivery.endpoint_id)
    )
    if channel.config.get("to_members") and (delivery.incident_id or delivery.endpoint_id):
        project_id = Endpoint.objects.filter(about).values("project_id")
        members = User.objects.filter(organization_id=channel.organization_id, is_active=True)
        members = members.filter(Q(role__in=MANAGER_ROLES) | Q(access__project_id__in=project_id))
        addresses += list(members.values_list("email", flat=True))
    return sorted(set(addresses))


def _send_mail(channel: NotificationChannel, delivery: Delivery) -> Sent:
    started = time.perf_counter()
    document = delivery.payload
    letters = [
        mail.EmailMessage(messages.mail_subject(document), messages.mail_body(document), to=[to])
        for to in _recipients(channel, delivery)
    ]
    try:
        with mail.get_connection(timeout=settings.NOTIFY_TIMEOUT_SECONDS) as connection:
            connection.send_messages(letters)
    except OSError as exc:  # smtplib's errors are OSErrors
        error = f"mail not sent: {type(exc).__name__}"
        return Sent(False, None, error, (time.perf_counter() - started) * 1000)
    return Sent(
        bool(letters),
        None,
        "" if letters else "no recipients",
        (time.perf_counter() - started) * 1000,
    )


def send_once(channel: NotificationChannel, delivery: Delivery) -> Sent:
    """One attempt at a delivery, by the channel's kind."""
    if channel.kind == ChannelKind.EMAIL:
        return _send_mail(channel, delivery)
    document = delivery.payload
    if channel.kind == ChannelKind.APPRISE:
        return apprise_send(channel.config["url"], document, settings.NOTIFY_TIMEOUT_SECONDS)
    headers = {EVENT_HEADER: delivery.event, ID_HEADER: str(delivery.event_id)}
    if channel.kind == ChannelKind.WEBHOOK:
        body = messages.encode(document)
        headers[SIGNATURE_HEADER] = signature(channel.secret, body)
        # Standard Webhooks: signed at each attempt, under the event's one id.
        headers |= signed_headers(
            channel.secret, message_id=str(delivery.event_id), at=timezone.now(), body=body
        )
    else:
        body = messages.encode(messages.chat_body(channel.kind, document))
    return post_json(channel.config["url"], body, headers, settings.NOTIFY_TIMEOUT_SECONDS)


def delivery_attempt(*, delivery_id: uuid.UUID, made: int | None = None) -> str | None:
    """Make the next attempt at a pending delivery and record it; returns its status
    after, or None when this task is not the one to make it (`made`: the attempts made
    when it was queued; a duplicate or late task finds more, and sends nothing).

    A failure is tried again after an exponential back-off, up to NOTIFY_MAX_ATTEMPTS
    (a channel flagged as failing gets one attempt). A delivery that gives up counts
    against its channel; NOTIFY_FLAG_AFTER of them in a row flag it.
    """
    pending = Delivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING)
    if made is None:
        made = pending.values_list("attempts", flat=True).first()
    now = timezone.now()
    # The claim: counted before it is made, so an attempt whose worker dies mid-send
    # counts too (a delivery that kills its workers is given up, not sent forever), and
    # held while it runs, so the sweep leaves it alone.
    if made is None or not pending.filter(attempts=made).update(
        attempts=made + 1, next_attempt_at=now + HOLD
    ):
        return None
    delivery = Delivery.objects.select_related("channel").get(pk=delivery_id)
    if overtaken_escalations([delivery]):
        return DeliveryStatus.SUPPRESSED
    return _record(delivery, _try(delivery), now)


OVERTAKEN = "not sent: the incident was acknowledged or resolved first"


def overtaken_escalations(deliveries: Sequence[Delivery]) -> set[uuid.UUID]:
    """Stop the escalation steps and reminders among claimed deliveries whose incident
    was acknowledged or resolved since they were written (still queued, or waiting out a
    retry): stored suppressed, never sent. Their ids; one query, none without a step."""
    steps = [d for d in deliveries if d.event == NotificationEvent.ESCALATED and d.incident_id]
    if not steps:
        return set()
    stopped = set(
        Incident.objects.filter(pk__in={d.incident_id for d in steps})
        .filter(Q(acknowledged_at__isnull=False) | Q(resolved_at__isnull=False))
        .values_list("pk", flat=True)
    )
    overtaken = {d.pk for d in steps if d.incident_id in stopped}
    if overtaken:
        Delivery.objects.filter(pk__in=overtaken, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.SUPPRESSED, next_attempt_at=None, last_error=OVERTAKEN
        )
    return overtaken


def _try(delivery: Delivery) -> Sent:
    """One send, or why none was made; never raises, so every attempt is recorded."""
    channel = delivery.channel
    if not channel.enabled:
        return Sent(False, None, "channel disabled", 0.0)
    # Past the cap only when earlier attempts died mid-send. A channel flagged meanwhile
    # still gets this attempt: `_record` gives up after it.
    if delivery.attempts > settings.NOTIFY_MAX_ATTEMPTS:
        return Sent(False, None, "given up: earlier attempts were cut off", 0.0)
    return _send_safely(channel, delivery)


def _send_safely(channel: NotificationChannel, delivery: Delivery) -> Sent:
    """`send_once`, an unexpected error recorded as a failed attempt rather than raised:
    a bug must not leave a delivery pending forever or answer a test with a 500."""
    try:
        return send_once(channel, delivery)
    except Exception as exc:
        # The type only: the message or the traceback's locals could hold the URL.
        logger.error("delivery %s: sending raised %s", delivery.pk, type(exc).__name__)
        return Sent(False, None, f"internal error ({type(exc).__name__})", 0.0)


def _attempt_limit(channel: NotificationChannel) -> int:
    """Attempts a delivery gets: one on a channel flagged as failing (or turned off)."""
    return 1 if channel.failing_since or not channel.enabled else settings.NOTIFY_MAX_ATTEMPTS


@transaction.atomic
def _record(delivery: Delivery, sent: Sent, at: datetime) -> str:
    _store_attempt(delivery, sent, at)
    channel = delivery.channel
    attempts = delivery.attempts
    if sent.ok:
        changes: dict[str, Any] = {
            "status": DeliveryStatus.DELIVERED,
            "delivered_at": timezone.now(),
            "next_attempt_at": None,
        }
        _clear_failures(channel.pk)
    elif attempts >= _attempt_limit(channel):
        changes = {"status": DeliveryStatus.FAILED, "next_attempt_at": None}
        if channel.enabled:  # a channel turned off is not failing
            _count_failure(channel, at)
    else:
        wait = _backoff(attempts, settings.NOTIFY_RETRY_BASE_SECONDS)
        changes = {"next_attempt_at": timezone.now() + wait}
    changes["last_error"] = sent.error[:MAX_ERROR_LENGTH]
    # Only a delivery still pending moves: a duplicate task that finished first wins.
    moved = Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).update(**changes)
    status = str(changes.get("status", DeliveryStatus.PENDING))
    outcome = "retry" if status == DeliveryStatus.PENDING else status
    if moved:
        transaction.on_commit(partial(metrics.delivery_observed, outcome=outcome), robust=True)
    if moved and status != DeliveryStatus.PENDING and delivery.incident_id is not None:
        delivered = status == DeliveryStatus.DELIVERED
        outcome_activity(delivery.incident_id, delivery, sent, delivered=delivered).save()
    # Never the URL, the error text or the body: a webhook's URL and its reply may hold a token.
    events.log(
        logging.INFO if sent.ok else logging.WARNING,
        "delivery_attempt",
        delivery_id=str(delivery.pk),
        channel_kind=channel.kind,
        attempt=attempts,
        status_code=sent.status_code,
        outcome=outcome if moved else "superseded",
        duration_ms=round(sent.duration_ms, 1),
    )
    return status


# Short words for a channel's kind in timeline lines ("Slack “ops”: incident.opened delivered").
_KIND_WORDS: dict[str, str] = {
    ChannelKind.EMAIL: "Email",
    ChannelKind.WEBHOOK: "Webhook",
    ChannelKind.SLACK: "Slack",
    ChannelKind.TEAMS: "Teams",
    ChannelKind.DISCORD: "Discord",
    ChannelKind.APPRISE: "Apprise",
}


def outcome_activity(
    incident_id: uuid.UUID, delivery: Delivery, sent: Sent, *, delivered: bool
) -> IncidentActivity:
    """The incident's timeline line (unsaved) for a delivery that ended: the channel's kind
    and name, the event, the outcome; never its URL or the error's text (either may hold a
    secret), only an HTTP status."""
    kind, text, detail = outcome_line(delivery, sent, delivered=delivered)
    return IncidentActivity(incident_id=incident_id, kind=kind, text=text, detail=detail)


def outcome_line(
    delivery: Delivery, sent: Sent, *, delivered: bool
) -> tuple[str, str, dict[str, str]]:
    """The kind, text and detail of a delivery's timeline line (`outcome_activity`)."""
    channel = delivery.channel
    label = f"{_KIND_WORDS.get(channel.kind, channel.kind)} “{channel.name}”"
    if delivered:
        text = f"{label}: {delivery.event} delivered"
    else:
        tries = f"{delivery.attempts} attempt{'s' if delivery.attempts != 1 else ''}"
        code = f" (HTTP {sent.status_code})" if sent.status_code else ""
        text = f"{label}: {delivery.event} failed after {tries}{code}"
    detail = {
        "delivery": str(delivery.pk),
        "channel": str(channel.pk),
        "channel_kind": channel.kind,
        "event": delivery.event,
    }
    kind = ActivityKind.DELIVERED if delivered else ActivityKind.DELIVERY_FAILED
    return kind, text[:500], detail


def _backoff(attempt: int, base: float, cap: float = 3600.0) -> timedelta:
    """The wait after a failed attempt: base, twice it, four times, ... (capped)."""
    return timedelta(seconds=min(cap, base * 2 ** (attempt - 1)))


def _clear_failures(channel_id: uuid.UUID) -> None:
    """A success: the channel works. Written only when there is something to clear, so
    that workers delivering to one channel do not all rewrite its row."""
    clean = Q(consecutive_failures=0, failing_since__isnull=True)
    NotificationChannel.objects.filter(pk=channel_id).exclude(clean).update(
        consecutive_failures=0, failing_since=None
    )


def _count_failure(channel: NotificationChannel, at: datetime) -> None:
    """One more delivery given up; the channel is flagged once they keep coming."""
    NotificationChannel.objects.filter(pk=channel.pk).update(
        consecutive_failures=F("consecutive_failures") + 1
    )
    NotificationChannel.objects.filter(
        pk=channel.pk,
        failing_since__isnull=True,
        consecutive_failures__gte=settings.NOTIFY_FLAG_AFTER,
    ).update(failing_since=at)


TEST_COOLDOWN_SECONDS = 5


def channel_test(*, channel: NotificationChannel) -> Delivery:
    """Send a test event now, once, and record it like any delivery (with its attempt).

    At most once per TEST_COOLDOWN_SECONDS per channel, whoever asks (API or page): a
    test must not turn the service into a traffic generator pointed at someone's URL.
    """
    if not cache.add(f"channel-test:{channel.pk}", 1, timeout=TEST_COOLDOWN_SECONDS):
        raise TestTooSoon(retry_after=TEST_COOLDOWN_SECONDS)
    now = timezone.now()
    key = uuid.uuid4()
    document = messages.event_document(
        event=NotificationEvent.TEST,
        event_id=key,
        occurred_at=now,
        incident=None,
        endpoint=None,
        project_name="",
    )
    # Stored as failed until the attempt says otherwise: a test is never retried.
    delivery = Delivery.objects.create(
        channel=channel,
        event=NotificationEvent.TEST,
        event_id=key,
        occurred_at=now,
        payload=document,
        status=DeliveryStatus.FAILED,
        attempts=1,
        last_error="not sent",
    )
    sent = _send_safely(channel, delivery)
    _store_attempt(delivery, sent, now)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.DELIVERED if sent.ok else DeliveryStatus.FAILED,
        last_error=sent.error[:MAX_ERROR_LENGTH],
        delivered_at=timezone.now() if sent.ok else None,
    )
    if sent.ok:
        _clear_failures(channel.pk)
    delivery.refresh_from_db()
    return delivery


def _store_attempt(delivery: Delivery, sent: Sent, at: datetime) -> None:
    DeliveryAttempt.objects.create(
        delivery=delivery,
        attempted_at=at,
        ok=sent.ok,
        status_code=sent.status_code,
        error=sent.error[:MAX_ERROR_LENGTH],
        duration_ms=sent.duration_ms,
    )
