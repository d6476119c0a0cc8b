"""Recurring maintenance windows: an RFC 5545 rule (`FREQ=MONTHLY;BYDAY=1SU`) read in an
IANA time zone from the first occurrence's wall-clock start.

Each occurrence starts at the rule's wall-clock time in the zone and lasts the first
occurrence's wall-clock span, then is turned into UTC: "first Sunday 02:00-04:00
Europe/Berlin" is 01:00-03:00 UTC in winter and 00:00-02:00 UTC in summer. python-dateutil
expands the rule; these functions are the only place that reads it.
"""

import re
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
NEVER = "The rule never occurs (within 10 years of starts_at; 400 days for HOURLY rules)."
UNKNOWN_ZONE = "Unknown time zone: give an IANA name such as Europe/Berlin or UTC."
# RFC 5545's ranges of each rule part, checked before dateutil sees the rule: it accepts
# some values out of range and then loops for ever (INTERVAL=0) or raises while expanding.
_DAY = r"[+-]?(\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)"
_RANGES = {
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (-31, 31, True),
    "BYYEARDAY": (-366, 366, True),
    "BYWEEKNO": (-53, 53, True),
    "BYMONTH": (1, 12, True),
    "BYSETPOS": (-366, 366, True),
}
_PARTS = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST", "BYDAY", *_RANGES, "BYMINUTE", "BYSECOND"}
MAX_INTERVAL = 1000
MAX_COUNT = 100_000
# How far from its start a rule must occur once to be accepted (`_occurs_soon`).
HORIZONS = dict.fromkeys(FREQUENCIES, MUST_OCCUR_WITHIN) | {"HOURLY": timedelta(days=400)}


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
    if frequency(rule) not in FREQUENCIES:
        return NOT_A_RULE.format(reason="FREQ is required")
    if reason := _out_of_range(rule) or _combination_error(rule):
        return NOT_A_RULE.format(reason=reason)
    try:
        zone = zone_of(zone_name)
    except ValueError:
        zone = ZoneInfo("UTC")
    first = starts_at.astimezone(zone)
    try:
        parsed = _parse(rule, first)
        occurs = _occurs_soon(parsed, first, frequency(rule))
    except Exception as exc:  # dateutil raises many kinds on odd rules: all are refusals
        return NOT_A_RULE.format(reason=str(exc).rstrip(".") or "unreadable")
    return "" if occurs else NEVER


def _out_of_range(rule: str) -> str:
    """The first part of the rule outside RFC 5545's ranges (or unknown), else ""."""
    for part in rule.split(";"):
        name, _, value = part.partition("=")
        if name not in _PARTS:
            return f"unknown part {name[:20]!r}"
        if name == "INTERVAL" and not (value.isdigit() and 1 <= int(value) <= MAX_INTERVAL):
            return f"INTERVAL must be 1 to {MAX_INTERVAL}"
        if name == "COUNT" and not (value.isdigit() and 1 <= int(value) <= MAX_COUNT):
            return f"COUNT must be 1 to {MAX_COUNT}"
        if name == "BYDAY" and not _days_fine(value, frequency(rule)):
            return "BYDAY takes days such as MO, 1SU or -1FR (1 to 5 in a month, 53 in a year)"
        if name in _RANGES and not _numbers_fine(value, *_RANGES[name]):
            low, high, _ = _RANGES[name]
            return f"{name} takes numbers from {low} to {high}" + (", not 0" if low < 0 else "")
    return ""


# The most days each month can have (February: in a leap year).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _combination_error(rule: str) -> str:
    """Why the rule's parts cannot go together, else "". dateutil walks on to the year
    9999 looking for a match of an impossible rule (seconds to minutes of CPU when hourly
    or daily), so what could never match is refused before it is expanded: RFC 5545's
    restrictions, and BYMONTHDAY days that no month in BYMONTH has."""
    parts = dict(part.partition("=")[::2] for part in rule.split(";"))
    freq = parts.get("FREQ", "")
    for name in ("BYWEEKNO", "BYYEARDAY"):
        if name in parts and freq != "YEARLY":
            return f"{name} is for YEARLY rules"
    if "BYSETPOS" in parts and freq not in ("MONTHLY", "YEARLY"):
        return "BYSETPOS is for MONTHLY and YEARLY rules"
    if "BYMONTHDAY" in parts and freq == "WEEKLY":
        return "BYMONTHDAY is not for WEEKLY rules"
    if "BYMONTHDAY" in parts:
        months = [int(m) for m in parts["BYMONTH"].split(",")] if "BYMONTH" in parts else []
        longest = max(_MONTH_DAYS[m - 1] for m in months) if months else 31
        if all(abs(int(day)) > longest for day in parts["BYMONTHDAY"].split(",")):
            return "no month of the rule has the days in BYMONTHDAY"
    return ""


def _numbers_fine(value: str, low: int, high: int, no_zero: bool) -> bool:
    items = value.split(",")
    if not all(re.fullmatch(r"[+-]?\d{1,3}", item) for item in items):
        return False
    return all(low <= int(item) <= high and not (no_zero and int(item) == 0) for item in items)


def _days_fine(value: str, freq: str) -> bool:
    limit = 5 if freq == "MONTHLY" else 53
    for item in value.split(","):
        found = re.fullmatch(_DAY, item)
        if found is None or (found.group(1) and not 1 <= int(found.group(1)) <= limit):
            return False
    return True


def _occurs_soon(parsed: rrule, first: datetime, freq: str) -> bool:
    """Whether the rule occurs within its horizon from its start (dateutil walks every
    period up to it: an hourly rule whose BY parts never match would walk 10 years of
    hours, seconds of CPU per request, so hourly rules look 400 days ahead)."""
    # An UNTIL bounds dateutil's walk; `between` alone would walk on while nothing matches.
    until = first + HORIZONS[freq]
    if parsed._until is not None:
        until = min(until, parsed._until)
    bounded = parsed.replace(until=until, count=None)
    return next(iter(bounded), None) is not None


def longest_span(rule: str) -> timedelta | None:
    """The span an occurrence of the rule must stay under (None: no rule)."""
    return FREQUENCIES.get(frequency(rule))


def _parse(rule: str, dtstart: datetime, *, cache: bool = False) -> rrule:
    parsed = rrulestr(rule, dtstart=dtstart, forceset=False, cache=cache)
    if not isinstance(parsed, rrule):
        raise ValueError("one RRULE only")
    return parsed


@lru_cache(maxsize=4096)
def _cached(rule: str, dtstart: datetime) -> rrule:
    # dateutil's own cache keeps the occurrences it walked: the next expansion of an old
    # window does not walk again from its first start.
    return _parse(rule, dtstart, cache=True)


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
    """Occurrences from `since` on (a day early, for offset changes), in one walk."""
    return parsed.xafter(since, inc=True)
