"""When a heartbeat is next due: a fixed period, or a cron expression read in a time zone.

Cron is cronsim's, which copies Debian (Vixie) cron across DST changes. A fixed-time job
(neither the minute nor the hour field starts with `*`) follows the wall clock: a time the
spring-forward jump skips (02:30 Europe/Berlin on 2026-03-29) runs at the first minute after
the jump (03:00 CEST), and a time the fall-back repeats runs once, at its first (summer)
occurrence. A wildcard job (`*/5 * * * *`) follows real time: every five minutes straight
through both changes.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from cronsim import CronSim, CronSimError

from healthmon.templatetags.healthmon import duration

# Field name (as cronsim's errors spell it) -> the values it takes, in expression order.
_FIELDS = {
    "minute": (0, 59),
    "hour": (0, 23),
    "day-of-month": (1, 31),
    "month": (1, 12),
    "day-of-week": (0, 7),
}
_NOT_ZONES = {"localtime", "Factory"}  # this machine's own zone, and tzdata's placeholder


@dataclass(frozen=True)
class Schedule:
    """How often a heartbeat is expected: every `period`, or at the `cron` times in `timezone`."""

    period: timedelta | None
    cron: str | None
    timezone: str = "UTC"


def schedule_of(interval_seconds: int, config: Mapping[str, Any]) -> Schedule:
    """Read an endpoint's schedule: `config.cron` (with `config.timezone`) replaces the period."""
    cron = config.get("cron")
    if cron:
        return Schedule(period=None, cron=cron, timezone=config.get("timezone") or "UTC")
    return Schedule(period=timedelta(seconds=interval_seconds), cron=None)


def next_due(schedule: Schedule, after: datetime) -> datetime:
    """Return the first expected time strictly after `after` (aware), as an aware UTC time."""
    if after.tzinfo is None:
        raise ValueError("next_due needs an aware datetime")
    if schedule.cron is None:
        assert schedule.period is not None  # noqa: S101 - a Schedule has one or the other
        return (after + schedule.period).astimezone(UTC)
    for local in CronSim(schedule.cron, after.astimezone(ZoneInfo(schedule.timezone))):
        # A fixed-time job read in the repeated fall-back hour yields its first (earlier)
        # occurrence, which has passed: the job ran then, so the next day's is due.
        due = local.astimezone(UTC)
        if due > after:
            return due
    raise ValueError(f"cron {schedule.cron!r} never runs")


def upcoming(schedule: Schedule, after: datetime, count: int = 5) -> list[datetime]:
    """Return the next `count` expected times after `after`, earliest first."""
    times: list[datetime] = []
    for _ in range(count):
        after = next_due(schedule, after)
        times.append(after)
    return times


def expected_times(schedule: Schedule, after: datetime, count: int = 5) -> list[datetime]:
    """The next `count` expected times in the schedule's own zone (UTC for a period): a
    cron's times read as its author wrote them."""
    zone = ZoneInfo(schedule.timezone)
    return [moment.astimezone(zone) for moment in upcoming(schedule, after, count)]


def schedule_errors(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Return what is wrong with `config.cron` and `config.timezone`, by field; empty if fine."""
    errors: dict[str, list[str]] = {}
    cron, zone = config.get("cron"), config.get("timezone")
    if cron is not None and (problem := _cron_problem(cron)):
        errors["config.cron"] = [f"Not a valid cron expression: {problem}."]
    if zone is not None and not (isinstance(zone, str) and zone in _zones()):
        shown = f" “{zone[:60]}”" if isinstance(zone, str) else ""
        errors["config.timezone"] = [
            f"Unknown time zone{shown}: use an IANA name such as Europe/Berlin or UTC."
        ]
    return errors


def describe(schedule: Schedule) -> str:
    """Say a schedule in a few words: "every 1 h", "cron `*/5 * * * *` (America/New_York)"."""
    if schedule.cron is None:
        assert schedule.period is not None  # noqa: S101 - a Schedule has one or the other
        return f"every {duration(schedule.period.total_seconds())}"
    return f"cron `{schedule.cron}` ({schedule.timezone})"


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones() - _NOT_ZONES)


def _cron_problem(cron: object) -> str | None:
    if not isinstance(cron, str):
        return "it must be text such as `*/5 * * * *`"
    fields = cron.split()
    if len(fields) != len(_FIELDS):
        return f"it has {len(fields)} fields; cron takes 5 ({' '.join(_FIELDS)})"
    try:
        next(CronSim(cron, datetime(2000, 1, 1, tzinfo=UTC)))
    except CronSimError as error:
        return _field_problem(fields, str(error))
    except ValueError:  # thousands of digits: past int()'s limit
        return "a number in it is far too large"
    except StopIteration:  # cronsim found no time in 50 years
        return "it never runs"
    return None


def _field_problem(fields: list[str], error: str) -> str:
    name = error.removeprefix("Bad ")
    if name not in _FIELDS:
        return error[:1].lower() + error[1:]
    low, high = _FIELDS[name]
    value = fields[list(_FIELDS).index(name)]
    if value.isascii() and value.isdigit():
        if len(value) > 9 or not low <= int(value) <= high:
            return f"{name} {value} is out of range ({low}-{high})"
        return f"{name} {value} never comes in the months given"
    return f"the {name} field `{value}` is not valid ({low}-{high})"
