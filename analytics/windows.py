"""Time ranges of analytics queries, and how rollup tiers tile them."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from django.conf import settings

from analytics.models import TIERS, Rollup
from healthmon.intervals import Interval, Window, merge, subtract

# The named ranges ending now: the pages offer them all, the API's `period=` accepts them all.
# Uptime figures are always over the last three (UPTIME_PERIODS).
PERIODS = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
UPTIME_PERIODS = ("24h", "7d", "30d")
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


def buckets(window: Window, width: timedelta) -> Iterator[datetime]:
    """Starts of the width-aligned buckets that overlap the window."""
    moment = floor(window.start, width)
    while moment < window.end:
        yield moment
        moment += width


Span = tuple[type[Rollup], datetime, datetime]


def tiles(window: Window, now: datetime) -> list[Span]:
    """Split a window into spans, each read from the coarsest tier whose whole buckets fit.

    Rows are selected by bucket start, so the window counts from its first boundary at
    the resolution its length calls for: 5 minutes up to two days, an hour up to 14 days,
    a day beyond (a few minutes of a week, or hours of a month, move no figure; reading 30
    rows per endpoint for a month instead of ~90 does). A window
    reaching now reads the current day's row whole: nothing lies after now. An edge whose
    finer rows are past their retention widens to the hours (or days) that hold it.
    """
    step = next(
        (
            tier.width
            for tier, days in zip(TIERS, (2, 14), strict=False)
            if window.seconds <= days * 86_400
        ),
        TIERS[-1].width,
    )
    end = window.end
    if end >= now:
        end = max(end, ceil(now, TIERS[-1].width))
    spans = _tile(ceil(window.start, step), end, len(TIERS) - 1)
    return _within_retention(spans, now)


def retention_cutoffs(now: datetime) -> dict[type[Rollup], datetime]:
    """Per tier, the oldest bucket start retention keeps (daily rows are kept forever)."""
    days = timedelta(days=1)
    return {
        TIERS[0]: now - settings.ROLLUP_5M_RETENTION_DAYS * days,
        TIERS[1]: now - settings.ROLLUP_1H_RETENTION_DAYS * days,
    }


def _within_retention(spans: list[Span], now: datetime) -> list[Span]:
    """Move spans whose rows may be deleted to the next tier, widened to its buckets; then
    drop what a coarser span already covers, so nothing is counted twice."""
    cutoffs = retention_cutoffs(now)
    moved: list[Span] = []
    for tier, start, end in spans:
        level = TIERS.index(tier)
        while tier in cutoffs and start < cutoffs[tier]:
            level += 1
            tier = TIERS[level]
            start, end = floor(start, tier.width), ceil(end, tier.width)
        moved.append((tier, start, end))
    result: list[Span] = []
    covered: list[Interval] = []
    for tier in reversed(TIERS):
        mine = merge((start, end) for t, start, end in moved if t is tier)
        result += [(tier, s, e) for s, e in subtract(mine, covered)]
        covered = merge([*covered, *mine])
    return sorted(result, key=lambda span: span[1])


def _tile(start: datetime, end: datetime, level: int) -> list[Span]:
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
