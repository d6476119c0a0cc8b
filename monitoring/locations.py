"""Probe locations: where an endpoint is probed from, which places are online, and how a
round's results from several places make one verdict.

A location is a Celery queue: a worker started with `PROBE_LOCATION=eu-west` consumes
`probes.eu-west` and probes from wherever it runs. The default location
(`PROBE_DEFAULT_LOCATION`) is served by workers started without it, through the ordinary
queues (`celery`, and `slow` for endpoints whose last check failed).

Decisions the contract leaves open, made here once:
- The default location is always dispatched to: its messages wait in the ordinary queues
  (and expire) as they did before locations existed, so an installation with one place
  works whatever its workers' heartbeats say. Named locations are dispatched to only while
  online (a heartbeat within `OFFLINE_AFTER`).
- A quorum larger than the locations judging a round (others offline or silent) is capped
  at their number: one location left can still call an outage.
- A round's verdict: failed when at least the quorum of the locations that answered
  failed; its response time the mean of the successful locations' times.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from monitoring.models import OFFLINE_AFTER, Endpoint, Location

QUEUE_PREFIX = "probes."
QUORUM_WORDS = ("any", "majority", "all")
DEFAULT_QUORUM = "majority"
# The header HTTP-family probes send, so a target can tell monitoring traffic and its origin.
LOCATION_HEADER = "X-Healthmon-Location"


def default_slug() -> str:
    """The default location's slug."""
    return str(settings.PROBE_DEFAULT_LOCATION)


def worker_slug() -> str:
    """The location this process probes from (`PROBE_LOCATION`, else the default)."""
    return str(settings.PROBE_LOCATION or settings.PROBE_DEFAULT_LOCATION)


def queue_for(slug: str) -> str | None:
    """The queue of a location's probe work; None for the default location (the ordinary
    queues)."""
    return None if slug == default_slug() else f"{QUEUE_PREFIX}{slug}"


def stored_slug(slug: str) -> str:
    """What a check stores as its `location`: empty for the default location."""
    return "" if slug == default_slug() else slug


def shown_slug(stored: str) -> str:
    """A check's `location` as the API shows it: the default location's slug for empty."""
    return stored or default_slug()


def endpoint_slugs(endpoint: Endpoint) -> list[str]:
    """The locations an endpoint is probed from (the default one when it lists none)."""
    return list(endpoint.locations or [default_slug()])


def online_slugs(now: datetime) -> set[str]:
    """Locations heard from within `OFFLINE_AFTER` of `now`, and the default location
    (always dispatched to, see the module's decisions)."""
    heard = Location.objects.filter(last_seen_at__gte=now - OFFLINE_AFTER)
    return {*heard.values_list("slug", flat=True), default_slug()}


def quorum_of(config: dict[str, object]) -> str | int:
    """An endpoint's quorum as configured (`config.quorum`, `majority` when unset)."""
    value = config.get("quorum", DEFAULT_QUORUM)
    return value if isinstance(value, int | str) and not isinstance(value, bool) else "majority"


def needed(quorum: str | int, judging: int) -> int:
    """How many of `judging` locations must fail for the round to fail (at least 1)."""
    if judging <= 0:
        return 1
    if quorum == "any":
        wanted = 1
    elif quorum == "all":
        wanted = judging
    elif isinstance(quorum, int):
        wanted = quorum
    else:  # majority
        wanted = judging // 2 + 1
    return max(1, min(wanted, judging))


@dataclass(frozen=True)
class LocationResult:
    """One location's result in a round."""

    location: str  # the shown slug
    ok: bool
    response_time_ms: float | None
    error: str


@dataclass(frozen=True)
class Verdict:
    """A round judged: failed when at least `needed` locations failed; `failing` names the
    failing locations (some but fewer than needed: the endpoint is degraded)."""

    ok: bool
    response_time_ms: float | None
    failing: tuple[LocationResult, ...]
    judged_by: int
    needed: int

    @property
    def partial(self) -> bool:
        """Some locations failed, fewer than the quorum."""
        return self.ok and bool(self.failing)

    def cause(self) -> str:
        """The failing locations with their errors, as an incident's cause or a status's
        reason: `eu-west: Connection refused; us-east: Timed out`."""
        return "; ".join(f"{r.location}: {r.error or 'failed'}" for r in self.failing)[:500]


def judge(results: Sequence[LocationResult], quorum: str | int) -> Verdict:
    """The verdict of a round from the results of the locations that answered."""
    failing = tuple(sorted((r for r in results if not r.ok), key=lambda r: r.location))
    want = needed(quorum, len(results))
    times = [r.response_time_ms for r in results if r.ok and r.response_time_ms is not None]
    mean = sum(times) / len(times) if times else None
    return Verdict(len(failing) < want, mean, failing, len(results), want)


def known_slugs(slugs: Iterable[str]) -> set[str]:
    """Which of these slugs name a location (the default one always does)."""
    wanted = set(slugs)
    found = set(Location.objects.filter(slug__in=wanted).values_list("slug", flat=True))
    return found | ({default_slug()} & wanted)


def listed_location_slugs() -> set[str]:
    """Every slug some endpoint lists (read to refuse deleting a location in use; rare)."""
    listed = Endpoint.objects.exclude(locations=[]).values_list("locations", flat=True)
    return {slug for slugs in listed.iterator() for slug in slugs}
