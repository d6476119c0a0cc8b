"""The sparkline: a tiny average response-time line for tables and cards."""

import itertools
from collections.abc import Sequence
from datetime import datetime

from django.utils.safestring import SafeString

from analytics.charts.scales import Frame, columns_of, merge
from analytics.charts.svg import PALETTE, escape, line_path, safe, stroke_attrs, tag, title_tag
from analytics.charts.words import duration, ms
from analytics.rows import SeriesPoint

FINEST_BUCKET = 300  # the 5-minute rollup: the span a lone sparkline point is given


def sparkline(
    points: Sequence[SeriesPoint],
    *,
    width: int = 120,
    height: int = 28,
    start: datetime | None = None,
    end: datetime | None = None,
) -> SafeString:
    """Draw a tiny average response-time line with no axes, for tables and cards.

    The range defaults to the points' own span from the first with a figure: a young
    endpoint's line fills the sparkline instead of being a dash at its right end. The line
    is scaled to its own low and high so that its shape shows; the accessible label gives
    the figures.
    """
    width, height = int(width), int(height)  # they are written into the markup unescaped
    stamps = sorted(p["t"].timestamp() for p in points) or [0.0]
    gaps = [b - a for a, b in itertools.pairwise(stamps) if b > a]
    if start is None:
        known = [p["t"].timestamp() for p in points if p.get("avg_ms") is not None]
        if known:  # the first figure found once, not once per point
            first = min(known)
            stamps = [stamp for stamp in stamps if stamp >= first]
    t0 = start.timestamp() if start else stamps[0]
    t1 = end.timestamp() if end else stamps[-1] + min(gaps, default=FINEST_BUCKET)
    columns = columns_of(points, t0, t1, width) if points and t1 > t0 else []
    total = merge(columns) if columns else None
    label, path = "No data", ""
    if total is not None and total.avg is not None:
        averages = [c.avg for c in columns if c.avg is not None]
        lo, hi = min(averages), max(averages)
        lo, hi = (lo, hi) if hi > lo else (lo - 1, lo + 1)  # a flat line sits in the middle
        frame = Frame(width, height, height - 2.0, t0, t1, hi, lo, 1.0, 2.0, width - 1.0)
        d = line_path(frame.spans(columns), frame.ys([c.avg for c in columns]))
        path = tag("path", cls="line avg", d=d, **stroke_attrs(PALETTE[0], 1.5))
        low, high = total.low if total.low is not None else lo, total.high or hi
        label = (
            f"Average response time over {duration(t1 - t0)}: {ms(total.avg)}"
            f" (min {ms(low)}, max {ms(high)})"
        )
    return safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sparkline" viewBox="0 0 {width}'
        f' {height}" width="{width}" height="{height}" role="img"'
        f' aria-label="{escape(label)}">{title_tag(label)}{path}</svg>'
    )
