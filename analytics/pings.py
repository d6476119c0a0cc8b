"""What a heartbeat's page shows beside the charts: its ping log, its ping URLs with
copy-ready snippets, and when the next ping is expected.

Only the first characters of each body are read: a stored body may be 100 kB, and fifty of
them would cost megabytes for a preview line each.
"""

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models.functions import Substr

from monitoring.models import Endpoint, Ping
from monitoring.schedules import Schedule, describe, expected_times, schedule_of

PING_LOG = 50
PREVIEW_CHARS = 120
CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
# A period as crontab fields, for the periods cron can say exactly.
_PERIOD_FIELDS = {
    86_400: "0 0 * * *",
    7 * 86_400: "0 0 * * 0",
    **{60 * m: f"*/{m} * * * *" for m in (2, 3, 4, 5, 6, 10, 12, 15, 20, 30)},
    60: "* * * * *",
    3600: "0 * * * *",
    **{3600 * h: f"0 */{h} * * *" for h in (2, 3, 4, 6, 8, 12)},
}


@dataclass(frozen=True)
class Snippet:
    """One copy-ready way to ping: its element id, its name and its text."""

    id: str
    label: str
    text: str


@dataclass(frozen=True)
class HeartbeatPanel:
    """A heartbeat's ping URLs, snippets, schedule and latest pings."""

    ping_url: str
    slug_url: str | None
    snippets: list[Snippet]
    schedule: str
    cron_fields_exact: bool
    next_times: list[tuple[str, str]]
    pings: list[Ping]


def heartbeat_panel(endpoint: Endpoint, now: datetime) -> HeartbeatPanel:
    """Everything the endpoint page adds for a heartbeat (its project read with it)."""
    assert endpoint.ping_url is not None  # noqa: S101 - heartbeats have a ping key
    schedule = schedule_of(endpoint.interval_seconds, endpoint.config)
    fields, exact = cron_fields(schedule)
    times = next_expected(schedule, endpoint.late_after, now)
    return HeartbeatPanel(
        ping_url=endpoint.ping_url,
        slug_url=slug_url(endpoint),
        snippets=snippets(endpoint.ping_url, fields),
        schedule=describe(schedule),
        cron_fields_exact=exact,
        next_times=[(t.isoformat(), f"{t:%Y-%m-%d %H:%M} {t.tzname()}") for t in times],
        pings=latest_pings(endpoint),
    )


def next_expected(schedule: Schedule, deadline: datetime | None, now: datetime) -> list[datetime]:
    """The next five expected pings: the pending deadline first, when it is still ahead (a
    period counts from the last ping, not from now), then the schedule's times after it."""
    if deadline is None or deadline <= now:
        return expected_times(schedule, now)
    zone = ZoneInfo(schedule.timezone)
    return [deadline.astimezone(zone), *expected_times(schedule, deadline, 4)]


def latest_pings(endpoint: Endpoint, limit: int = PING_LOG) -> list[Ping]:
    """The newest pings, each with `preview`: its body's first 121 characters (one more than
    shown, so that the page can tell a longer body)."""
    pings = (
        Ping.objects.filter(endpoint=endpoint)
        .defer("body")
        .annotate(preview=Substr("body", 1, PREVIEW_CHARS + 1))
        .order_by("-received_at", "-id")
    )
    return list(pings[:limit])


def slug_url(endpoint: Endpoint) -> str | None:
    """`/ping/<project ping_key>/<slug>`, when the heartbeat has a slug."""
    key = endpoint.project.ping_key
    if not endpoint.slug or not key:
        return None
    return f"{settings.WEB_BASE_URL}/ping/{key}/{endpoint.slug}"


def cron_fields(schedule: Schedule) -> tuple[str, bool]:
    """The five crontab fields of a schedule, and whether they say it exactly (a period cron
    cannot say, such as 90 minutes, gets hourly fields for the user to adapt)."""
    if schedule.cron is not None:
        return schedule.cron, True
    assert schedule.period is not None  # noqa: S101 - a Schedule has one or the other
    seconds = int(schedule.period.total_seconds())
    return _PERIOD_FIELDS.get(seconds, "0 * * * *"), seconds in _PERIOD_FIELDS


def snippets(url: str, fields: str) -> list[Snippet]:
    """curl, a crontab line that reports the start and the exit status, and PowerShell."""
    crontab = f"{fields} {CURL} {url}/start ; /path/to/job.sh ; {CURL} {url}/$?"
    return [
        Snippet("snippet-curl", "curl", f"{CURL} {url}"),
        Snippet("snippet-crontab", "crontab", crontab),
        Snippet("snippet-powershell", "PowerShell", f"Invoke-RestMethod {url}"),
    ]
