"""Numbers, durations, times and labels as the charts write them."""

import math
from datetime import UTC, datetime
from functools import lru_cache

from analytics.charts.scales import DAY, Column

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
TO = "\u2013"  # en dash, between the ends of a range
# The texts of a chart repeat from render to render (buckets start on round times, figures
# recur): each formatter keeps its latest answers rather than build them again per column.
MEMO = 4096


@lru_cache(maxsize=MEMO)
def ms(value: float) -> str:
    """A time in milliseconds as people read it: 0.25 ms, 120 ms, 1.5 s, 1,234 s."""
    if value < 10:
        return f"{value:.2f}".rstrip("0").rstrip(".") + " ms"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.3g} s" if value < 100_000 else f"{value / 1000:,.0f} s"


@lru_cache(maxsize=MEMO)
def duration(seconds: float) -> str:
    """A length in at most two units: 43 s, 5 min 12 s, 24 h, 3 d 4 h (hours up to 48)."""
    whole = round(seconds)
    units = (("d", DAY, "h", 3600, 2 * DAY), ("h", 3600, "min", 60, 3600), ("min", 60, "s", 1, 60))
    for unit, size, sub, sub_size, least in units:
        if whole >= least:
            big, rest = divmod(whole, size)
            return f"{big} {unit}" + (f" {rest // sub_size} {sub}" if rest // sub_size else "")
    return f"{whole} s"


@lru_cache(maxsize=MEMO)
def percent(value: float) -> str:
    """A share rounded down, so that 99.9996% never reads as 100%."""
    return f"{math.floor(value * 1000) / 1000:g}%"


def utc(stamp: float) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


def _clock(moment: datetime) -> str:
    # Fields, not strftime: three times faster, and there is one per column.
    clock = f"{moment.hour:02}:{moment.minute:02}"
    return f"{clock}:{moment.second:02}" if moment.second else clock


def day(moment: datetime) -> str:
    # Month names from a table, not strftime: the process locale must not change a page.
    return f"{MONTHS[moment.month - 1]} {moment.day}"


@lru_cache(maxsize=MEMO)
def when(stamp: float) -> str:
    return f"{utc(stamp):%Y-%m-%d %H:%M}"


@lru_cache(maxsize=MEMO)
def period(t0: float, t1: float, short: bool) -> str:
    """A column's time span, for its hover detail."""
    start, end = utc(t0), utc(t1)
    if short:
        return f"{_clock(start)}{TO}{_clock(end)} UTC"
    if (t1 - t0) % DAY == 0 and t0 % DAY == 0:
        last = utc(t1 - DAY)
        return day(start) if last == start else f"{day(start)}{TO}{day(last)}"
    return f"{day(start)} {_clock(start)}{TO}{_clock(end)} UTC"


def count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def shorten(label: str, size: int = 40) -> str:
    return label if len(label) <= size else label[: size - 1] + "\u2026"


def figures(column: Column) -> list[str]:
    named = (("avg", column.avg), ("min", column.low), ("max", column.high), ("p95", column.p95))
    return [f"{name} {ms(value)}" for name, value in named if value is not None]
