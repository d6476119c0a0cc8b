"""Time ranges and the arithmetic on lists of them: clip, intersect, subtract, merge, length.

An interval is a `(start, end)` pair of aware datetimes meaning [start, end). Lists given
to `intersect` and `subtract` are sorted and disjoint, as `merge` and `clip` return them;
each of those runs in one pass over both lists, so an endpoint with hundreds of incidents
and hundreds of weekly maintenance pieces stays linear (a subtract that rebuilt its pieces
for every hole made a 50-endpoint SLA page 16x slower).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

Interval = tuple[datetime, datetime]


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

    def overlaps(self, interval: Interval) -> bool:
        """Whether some of the interval lies inside the window."""
        return interval[1] > self.start and interval[0] < self.end


def clip(intervals: Iterable[Interval], window: Window) -> list[Interval]:
    """The parts of the intervals inside the window, empty ones left out (order kept)."""
    start, end = window.start, window.end
    clipped = [(max(s, start), min(e, end)) for s, e in intervals]
    return [(s, e) for s, e in clipped if e > s]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals sorted, with the overlapping and touching ones joined."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def intersect(first: Sequence[Interval], second: Sequence[Interval]) -> list[Interval]:
    """The time in both of two sorted, disjoint lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(first) and j < len(second):
        (a_start, a_end), (b_start, b_end) = first[i], second[j]
        start, end = max(a_start, b_start), min(a_end, b_end)
        if end > start:
            out.append((start, end))
        if a_end <= b_end:
            i += 1
        else:
            j += 1
    return out


def subtract(intervals: Sequence[Interval], holes: Sequence[Interval]) -> list[Interval]:
    """The parts of sorted, disjoint intervals outside every hole (sorted and disjoint too)."""
    out: list[Interval] = []
    j = 0
    for start, end in intervals:
        while j < len(holes) and holes[j][1] <= start:
            j += 1
        k = j
        while k < len(holes) and holes[k][0] < end:
            low, high = holes[k]
            if low > start:
                out.append((start, low))
            start = max(start, high)
            k += 1
        if end > start:
            out.append((start, end))
    return out


def length(intervals: Iterable[Interval], within: Window | None = None) -> float:
    """Seconds the intervals last (inside `within` when given); overlaps count twice."""
    total = 0.0
    for start, end in intervals:
        if within is not None:
            start, end = max(start, within.start), min(end, within.end)
        if end > start:
            total += (end - start).total_seconds()
    return total
