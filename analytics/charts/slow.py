"""Degraded stretches (successes slower than `config.degraded_above_ms`) as amber bands over
the response-time and availability charts: the endpoint was up then, and counted up."""

from collections.abc import Sequence

from analytics.charts.scales import Frame, Key
from analytics.charts.svg import PALETTE, box_attrs, tag, title_tag
from analytics.charts.words import duration, when
from healthmon.intervals import Interval

SLOW_FILL = PALETTE[1]  # the availability chart's amber
SLOW_KEY = Key("degraded (slow)", "degraded slow", SLOW_FILL, box=True)


def slow_keys(keys: Sequence[Key], stretches: Sequence[Interval]) -> tuple[Key, ...]:
    """The chart's legend, with the amber key when something is drawn in amber."""
    return (*keys, SLOW_KEY) if stretches else tuple(keys)


def slow_bands(frame: Frame, stretches: Sequence[Interval]) -> str:
    """An amber band across the plot per degraded stretch, clipped to the chart's range."""
    bands = []
    for began, ended in stretches:
        s, e = max(began.timestamp(), frame.t0), min(ended.timestamp(), frame.t1)
        if e <= s:
            continue
        x0 = frame.x(s)
        x1 = max(frame.x(e), x0 + 2)  # a short stretch stays visible
        box = box_attrs(x0, frame.top, x1 - x0, frame.bottom - frame.top)
        text = f"Degraded from {when(s)} UTC to {when(e)} UTC ({duration(e - s)}): slow, up"
        paint = {"fill": SLOW_FILL, "fill_opacity": "0.25"}
        bands.append(tag("rect", title_tag(text), cls="degraded slow", **box, **paint))
    return tag("g", "".join(bands), cls="slow-bands")
