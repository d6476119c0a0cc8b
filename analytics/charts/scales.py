"""Columns of buckets, their merging, the plot frame and the ticks of both axes."""

import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from analytics.rows import SeriesPoint

Span = tuple[float, float]
DAY = 86_400
# Tick steps of the time axis in seconds; a range over two days is labelled in whole days.
TIME_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
DAY_STEPS = (DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY)
# Layout in viewBox units: the title row, y labels, x labels and legend rows.
TOP, LEFT, RIGHT, X_LABELS, LEGEND_ROW = 28, 60, 14, 20, 16


@dataclass(slots=True)
class Column:
    """Figures of one bucket, or of consecutive buckets merged: [t0, t1) in Unix seconds."""

    t0: float
    t1: float
    avg: float | None
    low: float | None
    high: float | None
    p95: float | None
    count: int
    failures: int


@dataclass(frozen=True, slots=True)
class Frame:
    """The plot area inside the viewBox and what it maps: time on x, a value on y."""

    width: int
    height: int
    bottom: float
    t0: float
    t1: float
    y_max: float = 1.0
    y_min: float = 0.0
    left: float = LEFT
    top: float = TOP
    right: float = 0.0

    @property
    def short(self) -> bool:
        """Whether times are labelled HH:MM (two days or less) rather than by date."""
        return self.t1 - self.t0 <= 2 * DAY

    def x(self, stamp: float) -> float:
        """The x of a moment, clamped to the plot."""
        share = _share((stamp - self.t0) / (self.t1 - self.t0))
        return self.left + share * (self.right - self.left)

    def y(self, value: float) -> float:
        """The y of a value, clamped to the plot."""
        share = _share((value - self.y_min) / (self.y_max - self.y_min))
        return self.bottom - share * (self.bottom - self.top)

    def spans(self, columns: Sequence[Column]) -> list[Span]:
        """The x extent of each column."""
        # `x` and `_share` inlined (the same arithmetic): a chart maps hundreds of columns.
        t0, duration, left, size = self.t0, self.t1 - self.t0, self.left, self.right - self.left
        spans = []
        for c in columns:
            s, e = (c.t0 - t0) / duration, (c.t1 - t0) / duration
            s = 0.0 if s < 0.0 else 1.0 if s > 1.0 else s
            e = 0.0 if e < 0.0 else 1.0 if e > 1.0 else e
            spans.append((left + s * size, left + e * size))
        return spans

    def ys(self, values: Sequence[float | None]) -> list[float | None]:
        """The y of each value, None kept so that it leaves a gap."""
        low, extent = self.y_min, self.y_max - self.y_min
        bottom, size = self.bottom, self.bottom - self.top
        ys: list[float | None] = []
        for value in values:
            if value is None:
                ys.append(None)
                continue
            share = (value - low) / extent  # `y` and `_share` inlined, the same arithmetic
            ys.append(bottom - (0.0 if share < 0.0 else 1.0 if share > 1.0 else share) * size)
        return ys


def _share(share: float) -> float:
    """A share clamped to [0, 1]."""
    return 0.0 if share < 0.0 else 1.0 if share > 1.0 else share


@dataclass(frozen=True, slots=True)
class Key:
    """A legend entry: label, the class shared with what it stands for, swatch colour."""

    label: str
    cls: str
    colour: str
    box: bool = False
    dash: str | None = None


def value_ticks(top: float, target: int = 5) -> list[float]:
    """Round ticks from 0 to at least `top`, 1-2-5 steps apart."""
    raw = (top if top > 0 else 1.0) / target
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if raw <= m * base * (1 + 1e-9))
    return [round(i * step, 10) for i in range(math.ceil(raw * target / step - 1e-9) + 1)]


def time_ticks(frame: Frame) -> list[float]:
    """Moments to label on the time axis, on round UTC times (weeks on Mondays)."""
    most = max(int((frame.right - frame.left) // 80), 2)
    steps = TIME_STEPS if frame.short else DAY_STEPS
    step = next((s for s in steps if (frame.t1 - frame.t0) / s <= most), steps[-1])
    offset = 4 * DAY if step % (7 * DAY) == 0 else 0  # the epoch was a Thursday
    first = math.ceil((frame.t0 - offset) / step) * step + offset
    return [float(t) for t in range(int(first), int(frame.t1) + 1, step)]


def bucket_slots(times: Sequence[datetime], t0: float, t1: float) -> list[tuple[int, float, float]]:
    """(index, start, end) of the buckets overlapping [t0, t1); a bucket lasts the smallest
    gap between starts (or the range split evenly)."""
    stamps = [moment.timestamp() for moment in times]
    step = _step(stamps, t0, t1)
    return [(i, s, s + step) for i, s in enumerate(stamps) if s + step > t0 and s < t1]


def _step(stamps: Sequence[float], t0: float, t1: float) -> float:
    """How long a bucket lasts: the smallest gap between starts (or the range split evenly)."""
    gaps = [b - a for a, b in itertools.pairwise(stamps) if b > a]
    return min(gaps) if gaps else (t1 - t0) / max(len(stamps), 1)


def merge(chunk: Sequence[Column]) -> Column:
    """One column for consecutive ones: min of mins, max of maxes and of p95s, the average
    weighted by successful checks (a plain mean when none is counted)."""
    # One loop, not a pass per figure: this runs for every column of every chart.
    low = high = p95 = None
    weighted = weight = plain = 0.0
    known = count = failures = 0
    for c in chunk:
        count, failures = count + c.count, failures + c.failures
        if c.low is not None and (low is None or c.low < low):
            low = c.low
        if c.high is not None and (high is None or c.high > high):
            high = c.high
        if c.p95 is not None and (p95 is None or c.p95 > p95):
            p95 = c.p95
        if c.avg is not None:
            share = max(c.count - c.failures, 0)
            weighted += c.avg * share
            weight += share
            plain += c.avg
            known += 1
    avg = weighted / weight if weight else plain / known if known else None
    return Column(chunk[0].t0, chunk[-1].t1, avg, low, high, p95, count, failures)


_time_of = operator.itemgetter("t")


@dataclass(frozen=True, slots=True)
class Size:
    """A drawing's width and height in viewBox units, and the most columns it draws: a page
    draws a chart once per size (wide screens, phones) from the same bucketed data."""

    width: int
    height: int
    max_columns: int = 320


def columns_of(
    points: Sequence[SeriesPoint], t0: float, t1: float, max_columns: int
) -> list[Column]:
    """The points inside [t0, t1), merged in equal runs when there are over `max_columns`."""
    return fitted(bucketed(points, t0, t1), max_columns)


def bucketed(points: Sequence[SeriesPoint], t0: float, t1: float) -> list[Column]:
    """A column per point inside [t0, t1), in time order."""
    ordered = sorted(points, key=_time_of)
    stamps = [p["t"].timestamp() for p in ordered]
    step = _step(stamps, t0, t1)
    # `bucket_slots` inlined: a page buckets a few thousand points.
    columns = []
    for p, start in zip(ordered, stamps, strict=True):
        end = start + step
        if end > t0 and start < t1:
            figures = (p.get("avg_ms"), p.get("min_ms"), p.get("max_ms"), p.get("p95_ms"))
            columns.append(Column(start, end, *figures, p.get("count", 0), p.get("failures", 0)))
    return columns


def fitted(columns: list[Column], max_columns: int) -> list[Column]:
    """The columns, merged in equal runs when there are over `max_columns`."""
    if max_columns < 1:
        raise ValueError("max_columns must be at least 1")
    if len(columns) <= max_columns:
        return columns
    size = _chunk(math.ceil(len(columns) / max_columns), columns[0].t1 - columns[0].t0)
    return [merge(columns[i : i + size]) for i in range(0, len(columns), size)]


def _chunk(least: int, step: float) -> int:
    """Buckets per column: the least that fits, raised to a round span when one is near, so
    that columns read 12:00-12:05, not 12:00-12:04:30."""
    for seconds in (*TIME_STEPS, *DAY_STEPS):
        size = seconds / step
        if least <= size < 2 * least and size == int(size):
            return int(size)
    return least


def time_range(start: datetime, end: datetime) -> Span:
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be aware datetimes")
    if end <= start:
        raise ValueError("end must be after start")
    return start.timestamp(), end.timestamp()
