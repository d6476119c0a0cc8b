"""Time ranges of analytics queries, and how rollup tiers tile them."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analytics.models import TIERS, Rollup

PERIODS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
BUCKETS = {"5m": timedelta(minutes=5), "1h": timedelta(hours=1), "1d": timedelta(days=1)}
MAX_RANGE = timedelta(days=400)
MAX_POINTS = 10_000


def floor(moment: datetime, width: timedelta) -> datetime:
    """The start of the width-aligned bucket (from the Unix epoch, UTC) holding a moment."""
    seconds = int(width.total_seconds())
    stamp = int(moment.timestamp() // 1)
    return datetime.fromtimestamp(stamp - stamp % seconds, UTC)


def ceil(moment: datetime, width: timedelta) -> datetime:
    """The first bucket start at or after a moment."""
    start = floor(moment, width)
    return start if start == moment else start + width


@dataclass(frozen=True)
class Window:
    """A time range [start, end) in UTC."""

    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        """Its length."""
        return (self.end - self.start).total_seconds()

    def previous(self) -> "Window":
        """The window of the same length just before this one."""
        return Window(self.start - (self.end - self.start), self.start)

    def buckets(self, width: timedelta) -> Iterator[datetime]:
        """Starts of the width-aligned buckets that overlap the window."""
        moment = floor(self.start, width)
        while moment < self.end:
            yield moment
            moment += width


def tiles(window: Window, now: datetime) -> list[tuple[type[Rollup], datetime, datetime]]:
    """Split a window into spans, each read from the coarsest tier whose whole buckets fit.

    Rows are selected by bucket start, so the window counts from its first 5-minute
    boundary (first hour boundary when it spans more than two days: a few minutes of a
    week move no figure, and reading ~60 rows instead of ~90 per endpoint does). A window
    reaching now reads the current day's row whole: nothing lies after now.
    """
    step = TIERS[0].width if window.seconds <= 2 * 86_400 else TIERS[1].width
    end = window.end
    if end >= now:
        end = max(end, ceil(now, TIERS[-1].width))
    return _tile(ceil(window.start, step), end, len(TIERS) - 1)


def _tile(
    start: datetime, end: datetime, level: int
) -> list[tuple[type[Rollup], datetime, datetime]]:
    if start >= end:
        return []
    tier = TIERS[level]
    if level == 0:
        return [(tier, start, end)]
    first, last = ceil(start, tier.width), floor(end, tier.width)
    if first >= last:
        return _tile(start, end, level - 1)
    return [
        *_tile(start, first, level - 1),
        (tier, first, last),
        *_tile(last, end, level - 1),
    ]
