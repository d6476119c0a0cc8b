"""Which probe locations are alive: workers' heartbeats, and the watch loop that turns a
silent location offline, tells the operators once, and parks the endpoints it strands.

A worker keeps its location alive from a small thread of its own (`heartbeat_forever`,
started by `healthmon.celery` when the worker is ready): every `HEARTBEAT_EVERY` it stamps
the location and itself as heard. Beat runs `locations_watch` every few seconds on the
dispatch queue; each of its writes is a conditional UPDATE, so two watchers (two beats by
mistake) flip, open, announce and resolve each outage once.
"""

import time
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from healthmon.logging import get_logger
from monitoring.locations import QUEUE_PREFIX, online_slugs, queue_for, worker_slug
from monitoring.models import (
    OFFLINE_AFTER,
    Endpoint,
    EndpointStatus,
    EndpointType,
    Location,
    LocationOutage,
    LocationWorker,
    StatusChange,
)

logger = get_logger(__name__)
# Four beats fit in OFFLINE_AFTER: a location goes offline only after four are missed.
HEARTBEAT_EVERY = timedelta(seconds=15)
WORKER_FORGOTTEN_AFTER = timedelta(days=1)
# The ordinary queues the default location's probe work goes through (monitoring.scheduler).
DEFAULT_PROBE_QUEUES = frozenset({"celery", "slow"})


def location_heartbeat(*, slug: str, hostname: str, now: datetime) -> None:
    """Stamp a location and one of its workers as heard `now`; the first heartbeat of a
    location not defined yet creates it (named as in PROBE_LOCATIONS, else by its slug)."""
    name = dict(settings.PROBE_LOCATIONS).get(slug, slug)
    # One upsert each: two workers of a new location beating at once both succeed.
    (location,) = Location.objects.bulk_create(
        [Location(slug=slug, name=name, last_seen_at=now, online=True)],
        update_conflicts=True,
        unique_fields=["slug"],
        update_fields=["last_seen_at", "online"],
    )
    LocationWorker.objects.bulk_create(
        [LocationWorker(location_id=location.pk, hostname=hostname[:255], last_seen_at=now)],
        update_conflicts=True,
        unique_fields=["location", "hostname"],
        update_fields=["last_seen_at"],
    )


def locations_sync_settings() -> int:
    """Make a row for each location of PROBE_LOCATIONS (its name updated); rows that are
    not there any more stay (their checks and admin edits refer to them). Returns how many."""
    rows = [Location(slug=slug, name=name) for slug, name in settings.PROBE_LOCATIONS]
    if rows:
        Location.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["slug"], update_fields=["name"]
        )
    return len(rows)


def probes_from(slug: str, queues: Collection[str]) -> bool:
    """Whether a worker consuming `queues` runs probe work of location `slug` (a worker of
    the dispatch queue alone keeps no location alive)."""
    own = queue_for(slug)
    return own in queues if own is not None else bool(DEFAULT_PROBE_QUEUES & set(queues))


def heartbeat_forever(hostname: str, queues: Collection[str]) -> None:
    """A worker's heartbeat thread: sync PROBE_LOCATIONS once, then keep this worker's
    location alive every HEARTBEAT_EVERY while the process lives. Its database connection
    is closed between beats: an idle one would only hold a server slot."""
    slug, first = worker_slug(), True
    if not probes_from(slug, queues) and any(q.startswith(QUEUE_PREFIX) for q in queues):
        # `-Q probes.eu-west` without PROBE_LOCATION: it would probe eu-west's work yet
        # store it as the default location's, and keep no location alive.
        logger.warning("worker_location_unset", queues=sorted(queues), location=slug)
    while True:
        try:
            if first:
                locations_sync_settings()
                first = False
            if not probes_from(slug, queues):
                return
            location_heartbeat(slug=slug, hostname=hostname, now=timezone.now())
        except Exception:  # the database away for a while: try again on the next beat
            logger.exception("location_heartbeat_failed", location=slug)
        finally:
            try:
                connection.close()
            except Exception:  # a connection already broken: the next beat opens another
                logger.exception("location_heartbeat_failed", location=slug)
        time.sleep(HEARTBEAT_EVERY.total_seconds())


# --- The watch loop ------------------------------------------------------------------------


def locations_watch(now: datetime) -> int:
    """Flip locations silent for OFFLINE_AFTER to offline, opening one outage each; tell
    the operators of new outages and of locations heard again; park endpoints left with
    no online location as pending. Returns how many locations went offline."""
    gone = _flip_silent(now)
    LocationOutage.objects.bulk_create(
        [LocationOutage(location_id=pk, started_at=seen or now) for pk, seen in gone],
        ignore_conflicts=True,  # an outage already open (the partial unique index) stays
    )
    _announce_outages(now)
    _resolve_outages(now)
    endpoints_strand(now=now)
    # Workers gone for a day are forgotten (hosts with changing names: containers, pods).
    LocationWorker.objects.filter(last_seen_at__lt=now - WORKER_FORGOTTEN_AFTER).delete()
    return len(gone)


def _flip_silent(now: datetime) -> list[tuple[int, datetime | None]]:
    """One conditional UPDATE: online locations unheard since the cutoff go offline. Only
    the watcher whose UPDATE changed a row gets it back, so each flip is handled once."""
    table = connection.ops.quote_name(Location._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET online = %s "  # noqa: S608 - the table name is ours
            "WHERE online AND (last_seen_at IS NULL OR last_seen_at < %s) "
            "RETURNING id, last_seen_at",
            [False, now - OFFLINE_AFTER],
        )
        rows = cursor.fetchall()
    return [(pk, _aware(seen)) for pk, seen in rows]


def _aware(value: datetime | str | None) -> datetime | None:
    """A timestamp read by raw SQL as Django reads it (SQLite hands back text)."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else timezone.make_aware(value)
    return datetime.fromisoformat(value).replace(tzinfo=timezone.get_current_timezone())


def _announce_outages(now: datetime) -> None:
    """The outbox: each open, unannounced outage is claimed by stamping it, then told; a
    mail that fails gives the claim back, to be tried on the next run."""
    waiting = LocationOutage.objects.filter(announced_at__isnull=True, resolved_at__isnull=True)
    for outage in waiting.select_related("location"):
        claimed = LocationOutage.objects.filter(pk=outage.pk, announced_at__isnull=True)
        if not claimed.update(announced_at=now):
            continue
        location, since = outage.location, outage.started_at
        logger.warning("location_offline", location=location.slug, since=since.isoformat())
        subject = f"Probe location {location.slug} is offline"
        body = (
            f"No worker of probe location {location.name} ({location.slug}) has been heard "
            f"since {since:%Y-%m-%d %H:%M:%S} UTC.\n\nEndpoints probed from other locations "
            "go on being judged by those; endpoints probed only from here wait as pending "
            "until one of its workers is back.\n"
        )
        try:
            _tell_operators(subject, body)
        except Exception:
            logger.exception("location_announcement_failed", location=location.slug)
            LocationOutage.objects.filter(pk=outage.pk).update(announced_at=None)


def _resolve_outages(now: datetime) -> None:
    """Open outages of locations heard again: resolved once each, told when announced."""
    heard = Q(location__last_seen_at__gte=now - OFFLINE_AFTER)
    for outage in LocationOutage.objects.filter(heard, resolved_at__isnull=True).select_related(
        "location"
    ):
        closed = LocationOutage.objects.filter(pk=outage.pk, resolved_at__isnull=True)
        if not closed.update(resolved_at=now):
            continue
        location = outage.location
        logger.info("location_online", location=location.slug, since=outage.started_at.isoformat())
        if outage.announced_at is None:
            continue  # nobody was told it went away
        try:
            _tell_operators(
                f"Probe location {location.slug} is back online",
                f"Probe location {location.name} ({location.slug}) is heard again "
                f"({now:%Y-%m-%d %H:%M:%S} UTC); it was silent since "
                f"{outage.started_at:%Y-%m-%d %H:%M:%S} UTC.\n",
            )
        except Exception:
            logger.exception("location_announcement_failed", location=location.slug)


def _tell_operators(subject: str, body: str) -> int:
    """Mail the service's operators (active staff users with an address), one message
    each, over one connection."""
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    to = sorted(set(users.values_list("email", flat=True)))
    return mail.send_mass_mail([(subject, body, None, [address]) for address in to])


# --- Endpoints left with no location ---------------------------------------------------------


def endpoints_strand(*, now: datetime) -> int:
    """Move endpoints whose every listed location is offline to pending, saying which are
    offline; returns how many moved. They leave pending through the check pipeline once a
    location answers again. The default location is always dispatched to, so endpoints
    listing none (or it) are never parked."""
    online = online_slugs(now)
    offline = set(Location.objects.values_list("slug", flat=True)) - online
    if not offline:
        return 0  # the usual case: one query
    listed = (
        Endpoint.objects.filter(enabled=True)
        .exclude(type=EndpointType.HEARTBEAT)
        .exclude(status=EndpointStatus.PENDING)
        .exclude(locations=[])
        .values_list("id", "locations")
    )
    stranded = [pk for pk, slugs in listed if not online.intersection(slugs)]
    return _park(stranded, online, now) if stranded else 0


@transaction.atomic
def _park(stranded: Sequence[UUID], online: Collection[str], now: datetime) -> int:
    """Move these endpoints to pending under their row locks (the check pipeline takes the
    same ones), recording each move; one whose locations changed meanwhile stays."""
    changes = []
    endpoints = (
        Endpoint.objects.select_for_update(no_key=True)
        .filter(pk__in=stranded, enabled=True)
        .exclude(status=EndpointStatus.PENDING)
        .order_by("pk")
    )
    for endpoint in endpoints:
        if not endpoint.locations or set(endpoint.locations) & set(online):
            continue
        reason = f"No probe location online: {', '.join(sorted(endpoint.locations))} offline"
        change = endpoint.move_to(EndpointStatus.PENDING, now, reason)
        if change is None:
            continue
        # The streak before the silence ends here: leaving pending, the pipeline dates the
        # change at the new streak's start, never before this move.
        endpoint.streak_ok, endpoint.streak_length, endpoint.streak_started_at = None, 0, None
        endpoint.save(update_fields=["status", "streak_ok", "streak_length", "streak_started_at"])
        changes.append(change)
        logger.info(
            "status_changed",
            endpoint_id=str(endpoint.pk),
            type=endpoint.type,
            from_status=change.from_status,
            to_status=change.to_status,
            error=reason,
        )
    StatusChange.objects.bulk_create(changes)
    return len(changes)
