"""What each badge says about whatever its key names: an endpoint, or a public status page
standing for its components.

Reads only: the statuses come from `statuspages.states` (the page's vocabulary), maintenance
from `alerts.maintenance`, uptime and response time from `analytics.selectors`, the same
reads the dashboards and the API make, so a badge never disagrees with them. Every read is a
fixed number of queries whatever the number of components. The words are fixed ones and
numbers: nothing of the endpoint (name, target, errors) reaches a badge.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from alerts.maintenance import maintenance_intervals
from analytics import selectors
from healthmon.intervals import Window
from monitoring.models import Endpoint, EndpointStatus, Incident, IncidentKind
from statuspages.badges import Badge
from statuspages.models import StatusPage, Visibility
from statuspages.states import component_status, overall

# The spans an uptime badge may cover; `uptime.svg` without `?period=` shows 30 days.
UPTIME_PERIODS = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}
DEFAULT_UPTIME_PERIOD = "30d"
RESPONSE_TIME_SPAN = timedelta(hours=24)
NO_DATA = "no data"

# An endpoint's measured status in a badge's words and colour.
_ENDPOINT_WORDS: dict[str, tuple[str, str]] = {
    EndpointStatus.UP: ("up", "brightgreen"),
    EndpointStatus.DEGRADED: ("degraded", "yellow"),
    EndpointStatus.LATE: ("late", "orange"),
    EndpointStatus.DOWN: ("down", "red"),
    EndpointStatus.PAUSED: ("paused", "lightgrey"),
    EndpointStatus.PENDING: ("pending", "lightgrey"),
}
MAINTENANCE = ("maintenance", "blue")
_UNKNOWN = ("unknown", "lightgrey")  # a status added later and not named here yet

# A page's overall indicator (`statuspages.states.Overall`) in a badge's words and colour.
_PAGE_WORDS: dict[str, tuple[str, str]] = {
    "none": ("operational", "brightgreen"),
    "minor": ("degraded", "yellow"),
    "major": ("partial outage", "orange"),
    "critical": ("major outage", "red"),
    "maintenance": MAINTENANCE,
}

# Lowest figure first reaching each colour: uptime in %, response time in ms (at most).
_UPTIME_COLOURS = ((99.9, "brightgreen"), (99.0, "green"), (95.0, "yellow"), (90.0, "orange"))
_RESPONSE_COLOURS = ((200, "brightgreen"), (500, "green"), (1000, "yellow"), (2000, "orange"))

# The columns the reads use: a whole endpoint row would decrypt its target and config.
_COLUMNS = ("id", "project", "status", "created_at")
# One key stands for all of a subject's endpoints in `selectors.latency` and `check_counts`.
_ALL = UUID(int=0)


@dataclass(frozen=True)
class Subject:
    """What a badge key names: one endpoint, or a page's component endpoints (`page` set)."""

    endpoints: list[Endpoint]
    page: StatusPage | None = None

    @property
    def owners(self) -> dict[UUID, UUID]:
        """Every endpoint adding into one figure (see `selectors.latency`)."""
        return {endpoint.pk: _ALL for endpoint in self.endpoints}


def subject_for_key(badge_key: str) -> Subject | None:
    """The endpoint or public page a badge key names; None for an unknown key and for a
    page that is not public (password and private pages have no badge)."""
    endpoint = Endpoint.objects.filter(badge_key=badge_key).only(*_COLUMNS).first()
    if endpoint is not None:
        return Subject([endpoint])
    page = (
        StatusPage.objects.filter(badge_key=badge_key)
        .only("id", "visibility", "show_response_times")
        .first()
    )
    if page is None or page.visibility != Visibility.PUBLIC:
        return None
    endpoints = list(
        Endpoint.objects.filter(status_components__page=page).only(*_COLUMNS).order_by("id")
    )
    return Subject(endpoints, page)


def status_badge(subject: Subject, now: datetime) -> Badge:
    """An endpoint's status (maintenance over what is measured), or a page's overall state
    over its components, as the page itself computes it."""
    label = "status"
    held = maintenance_intervals(subject.endpoints, now, now + timedelta(microseconds=1))
    if subject.page is None:
        endpoint = subject.endpoints[0]
        words = (
            MAINTENANCE if endpoint.pk in held else _ENDPOINT_WORDS.get(endpoint.status, _UNKNOWN)
        )
        return Badge(label, *words)
    declared = _declared_impacts(subject.endpoints)
    statuses = [
        component_status(
            endpoint.status, in_maintenance=endpoint.pk in held, declared=declared[endpoint.pk]
        )
        for endpoint in subject.endpoints
    ]
    return Badge(label, *_PAGE_WORDS[overall(statuses).indicator])


def _declared_impacts(endpoints: list[Endpoint]) -> dict[UUID, list[str]]:
    """The impacts of open public declared incidents on each endpoint (one query)."""
    links = Incident.endpoints.through.objects.filter(
        endpoint_id__in=[endpoint.pk for endpoint in endpoints],
        incident__kind=IncidentKind.MANUAL,
        incident__public=True,
        incident__resolved_at__isnull=True,
    ).values_list("endpoint_id", "incident__impact")
    found: dict[UUID, list[str]] = defaultdict(list)
    for endpoint_id, impact in links:
        found[endpoint_id].append(impact)
    return found


def uptime_badge(subject: Subject, period: str, now: datetime) -> Badge:
    """Time-weighted uptime over the period: an endpoint's, or a page's components' together
    (their watched and down seconds summed, as analytics adds up a project); "no data" when
    no check fell in the period."""
    window = Window(now - UPTIME_PERIODS[period], now)
    covered = selectors.coverage(subject.endpoints, window, now)
    watched, down = selectors.coverage_seconds(covered.values())
    checks = selectors.check_counts(subject.owners, [window], now).get(_ALL, [0])[0]
    uptime = selectors.uptime_percent(watched, down, checks)
    label = f"uptime {period}"
    if uptime is None:
        return Badge(label, NO_DATA, "lightgrey")
    return Badge(label, uptime_text(uptime), uptime_colour(uptime))


def uptime_colour(uptime: float) -> str:
    """≥ 99.9 % bright green, ≥ 99 green, ≥ 95 yellow, ≥ 90 orange, else red."""
    return next((name for floor, name in _UPTIME_COLOURS if uptime >= floor), "red")


def uptime_text(uptime: float) -> str:
    """ "100%", else two decimals cut, not rounded: 99.999 is no "100.00%"."""
    if uptime >= 100:
        return "100%"
    return f"{int(uptime * 100) / 100:.2f}%"


def response_time_badge(subject: Subject, now: datetime) -> Badge:
    """The mean response time of successful checks over the last 24 hours; a page's over
    all its components' checks together."""
    label = "response time"
    window = Window(now - RESPONSE_TIME_SPAN, now)
    found = selectors.latency(subject.owners, window, now, histograms=False).get(_ALL)
    mean = found.avg_ms if found is not None else None
    if mean is None:
        return Badge(label, NO_DATA, "lightgrey")
    colour = next((name for ceiling, name in _RESPONSE_COLOURS if mean <= ceiling), "red")
    return Badge(label, f"{round(mean)} ms", colour)
