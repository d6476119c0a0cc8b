"""Recurring maintenance windows: an RFC 5545 rule (`FREQ=MONTHLY;BYDAY=1SU`) read in an
IANA time zone from the first occurrence's wall-clock start.

Each occurrence starts at the rule's wall-clock time in the zone and lasts the first
occurrence's wall-clock span, then is turned into UTC: "first Sunday 02:00-04:00
Europe/Berlin" is 01:00-03:00 UTC in winter and 00:00-02:00 UTC in summer. python-dateutil
expands the rule; these functions are the only place that reads it.
"""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import rrule, rrulestr

WEEKLY = "FREQ=WEEKLY"
# How far after its first start a rule must occur at least once to be accepted (a rule such
# as `FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30` never does: dateutil would search for ages).
MUST_OCCUR_WITHIN = timedelta(days=3660)
# The frequencies accepted, with the span an occurrence must stay under (so that two
# occurrences of the plain rule never overlap).
FREQUENCIES = {
    "HOURLY": timedelta(hours=1),
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(days=7),
    "MONTHLY": timedelta(days=28),
    "YEARLY": timedelta(days=365),
}
NOT_A_RULE = "Not a valid RFC 5545 recurrence rule: {reason}."
HAS_DTSTART = "DTSTART is taken from starts_at and timezone: leave it out of the rule."
TOO_FINE = "FREQ must be HOURLY or coarser (MINUTELY and SECONDLY windows are refused)."
CLOCK_PARTS = "BYMINUTE and BYSECOND are refused: the time of day comes from starts_at."
NEVER = "The rule never occurs (within 10 years of starts_at)."
UNKNOWN_ZONE = "Unknown time zone: give an IANA name such as Europe/Berlin or UTC."


def normalized(text: str) -> str:
    """The rule as stored: trimmed, upper case, without an `RRULE:` prefix."""
    rule = text.strip().upper()
    return rule.removeprefix("RRULE:").strip()


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone; ValueError (`UNKNOWN_ZONE`) when there is none of that name."""
    try:
        return ZoneInfo(name) if name and "\x00" not in name else ZoneInfo("")
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(UNKNOWN_ZONE) from exc


def frequency(rule: str) -> str:
    """The rule's FREQ value ("" when it names none)."""
    for part in rule.split(";"):
        name, _, value = part.partition("=")
        if name == "FREQ":
            return value
    return ""


def rule_error(rule: str, *, starts_at: datetime, zone_name: str) -> str:
    """Why a (normalized) rule is refused, or "" when it is fine. The zone is judged
    apart; an unknown one reads the rule in UTC here."""
    if "DTSTART" in rule:
        return HAS_DTSTART
    if "\n" in rule or "\r" in rule:
        return NOT_A_RULE.format(reason="one RRULE line only")
    names = {part.partition("=")[0] for part in rule.split(";")}
    if frequency(rule) in ("MINUTELY", "SECONDLY"):
        return TOO_FINE
    if names & {"BYMINUTE", "BYSECOND"}:
        return CLOCK_PARTS
    try:
        zone = zone_of(zone_name)
    except ValueError:
        zone = ZoneInfo("UTC")
    try:
        parsed = _parse(rule, starts_at.astimezone(zone))
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        return NOT_A_RULE.format(reason=str(exc).rstrip(".") or "unreadable")
    if frequency(rule) not in FREQUENCIES:
        return NOT_A_RULE.format(reason="FREQ is required")
    first = starts_at.astimezone(zone)
    if not parsed.between(first, first + MUST_OCCUR_WITHIN, inc=True, count=1):
        return NEVER
    return ""


def longest_span(rule: str) -> timedelta | None:
    """The span an occurrence of the rule must stay under (None: no rule)."""
    return FREQUENCIES.get(frequency(rule))


def _parse(rule: str, dtstart: datetime) -> rrule:
    parsed = rrulestr(rule, dtstart=dtstart, forceset=False)
    if not isinstance(parsed, rrule):
        raise ValueError("one RRULE only")
    return parsed


@lru_cache(maxsize=4096)
def _cached(rule: str, dtstart: datetime) -> rrule:
    return _parse(rule, dtstart)


def _local(moment: datetime, zone: ZoneInfo) -> datetime:
    return moment.astimezone(zone)


def expand(
    *,
    rule: str,
    zone_name: str,
    starts_at: datetime,
    ends_at: datetime,
    start: datetime,
    end: datetime,
) -> list[tuple[datetime, datetime]]:
    """The occurrences (UTC start, UTC end) overlapping [start, end), in time order."""
    zone = zone_of(zone_name)
    first = _local(starts_at, zone)
    span = ends_at.astimezone(zone).replace(tzinfo=None) - first.replace(tzinfo=None)
    # Occurrences starting up to a span (and a day for offset changes) before `start`.
    since = _local(start, zone) - span - timedelta(days=1)
    until = _local(end, zone) + timedelta(days=1)
    found = []
    for begin in _cached(rule, first).between(since, until, inc=True):
        occurrence = _utc(begin, span)
        if occurrence[0] < end and occurrence[1] > start:
            found.append(occurrence)
    return found


def _utc(begin: datetime, span: timedelta) -> tuple[datetime, datetime]:
    """An occurrence from its local start: the end is the same wall-clock span later."""
    finish = (begin.replace(tzinfo=None) + span).replace(tzinfo=begin.tzinfo)
    return begin.astimezone(UTC), finish.astimezone(UTC)


def next_start(*, rule: str, zone_name: str, starts_at: datetime, now: datetime) -> datetime | None:
    """The UTC start of the first occurrence at or after now, if any."""
    zone = zone_of(zone_name)
    first = _local(starts_at, zone)
    for begin in _after(_cached(rule, first), _local(now, zone) - timedelta(days=1)):
        moment = begin.astimezone(UTC)
        if moment >= now:
            return moment
    return None


def _after(parsed: rrule, since: datetime) -> Iterator[datetime]:
    """Occurrences from `since` on (a day early, for offset changes), a few at a time."""
    moment = parsed.after(since, inc=True)
    while moment is not None:
        yield moment
        moment = parsed.after(moment, inc=False)
