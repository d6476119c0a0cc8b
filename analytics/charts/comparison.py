"""The comparison chart: several series' average response time overlaid, optionally over
the band between their lowest and highest average in each column (an endpoint's
locations)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils.safestring import SafeString

from analytics.charts.scales import (
    Column,
    Frame,
    Key,
    Size,
    Span,
    bucketed,
    fitted,
    merge,
    time_range,
    value_ticks,
)
from analytics.charts.svg import (
    PALETTE,
    axes,
    band_path,
    chart_svg,
    corner_note,
    hits,
    legend,
    line_path,
    no_data,
    plot_frame,
    stroke_attrs,
    tag,
)
from analytics.charts.words import TO, figures, ms, period, shorten, when
from analytics.rows import SeriesPoint

MAX_SERIES = 10
# From the fifth series on lines are dashed too: neighbouring hues get close, then repeat.
DASHES = ("6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 2 1 2")


@dataclass(frozen=True, slots=True)
class Shared:
    """What a comparison chart's sizes share."""

    title: str
    span: Span
    keys: list[Key]
    since: datetime | None
    id_prefix: str | None
    band: bool


def _series_key(index: int, label: str) -> Key:
    dash = DASHES[(index - 4) % len(DASHES)] if index >= 4 else None
    return Key(label, f"series-{index}", PALETTE[index % len(PALETTE)], dash=dash)


def _compare_line(frame: Frame, key: Key, columns: Sequence[Column]) -> str:
    """One series' average line, tagged with its label."""
    d = line_path(frame.spans(columns), frame.ys([c.avg for c in columns]))
    tags = {"cls": f"line compare {key.cls}", "data_series": "compare", "data_label": key.label}
    return tag("path", **tags, d=d, **stroke_attrs(key.colour, 2, key.dash))


def _spread_band(frame: Frame, drawn: Sequence[tuple[str, list[Column]]]) -> str:
    """The band from the lowest to the highest of the series' averages in each column,
    where at least two series have one (columns line up: the series share their buckets)."""
    if len(drawn) < 2:
        return ""
    series = [columns for _, columns in drawn]
    lows: list[float | None] = []
    highs: list[float | None] = []
    for index in range(min(len(columns) for columns in series)):
        averages = [avg for c in series if (avg := c[index].avg) is not None]
        lows.append(min(averages) if len(averages) > 1 else None)
        highs.append(max(averages) if len(averages) > 1 else None)
    spans = frame.spans(series[0][: len(lows)])
    d = band_path(spans, frame.ys(lows), frame.ys(highs))
    return tag(
        "path", cls="band spread", data_series="band", d=d, fill=PALETTE[0], fill_opacity="0.12"
    )


def _compare_hits(frame: Frame, drawn: Sequence[tuple[str, list[Column]]]) -> str:
    """Hover details per column: every series' average there."""
    columns: dict[float, tuple[float, list[str]]] = {}
    for label, series in drawn:
        short = shorten(label)  # once per series, not per column
        for c in series:
            figure = ms(c.avg) if c.avg is not None else "no data"
            column = columns.get(c.t0)
            if column is None:
                column = columns[c.t0] = (c.t1, [])
            column[1].append(f"{short}: {figure}")
    ordered = sorted(columns.items())
    spans = [(frame.x(t0), frame.x(t1)) for t0, (t1, _) in ordered]
    details = [
        f"{period(t0, t1, frame.short)} — " + "; ".join(lines) for t0, (t1, lines) in ordered
    ]
    return hits(frame, spans, details)


def _comparison_desc(title: str, span: Span, drawn: Sequence[tuple[str, list[Column]]]) -> str:
    """Each series' average, min and max, in words."""
    parts = []
    for label, series in drawn:
        total = merge(series) if series else None
        if total is None or total.avg is None:
            parts.append(f"{label}: no data")
            continue
        extremes = ", ".join(figures(total)[1:3])
        parts.append(f"{label}: average {ms(total.avg)}" + (f" ({extremes})" * bool(extremes)))
    head = f"{title}, {when(span[0])} to {when(span[1])} UTC, {len(drawn)} series"
    return f"{head}. " + "; ".join(parts) + "."


def comparison_chart(
    series: Sequence[tuple[str, Sequence[SeriesPoint]]],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time comparison",
    width: int = 960,
    height: int = 320,
    max_columns: int = 320,
    id_prefix: str | None = None,
    since: datetime | None = None,
    band: str | None = None,
) -> SafeString:
    """Overlay the average response time of up to ten `(label, points)` series; with `band`
    (what the series are, e.g. "locations"), over the band between their averages."""
    size = Size(width, height, max_columns)
    return comparison_charts(
        series,
        [size],
        start=start,
        end=end,
        title=title,
        since=since,
        band=band,
        id_prefix=id_prefix,
    )[0]


def comparison_charts(
    series: Sequence[tuple[str, Sequence[SeriesPoint]]],
    sizes: Sequence[Size],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time comparison",
    since: datetime | None = None,
    band: str | None = None,
    id_prefix: str | None = None,
) -> list[SafeString]:
    """`comparison_chart` at each size (a page's wide and phone drawings), the series
    bucketed once for all of them."""
    if len(series) > MAX_SERIES:
        raise ValueError(f"at most {MAX_SERIES} series can be compared")
    if id_prefix is not None and len(sizes) > 1:
        raise ValueError("one id_prefix cannot name several charts")
    span = time_range(start, end)
    columns = [(label, bucketed(points, *span)) for label, points in series]
    keys = [_series_key(i, label) for i, (label, _) in enumerate(columns)]
    if band:
        keys.append(Key(f"lowest{TO}highest average across {band}", "band", PALETTE[0], box=True))
    shared = Shared(title, span, keys, since, id_prefix, bool(band))
    return [_comparison(shared, columns, size) for size in sizes]


def _comparison(
    shared: Shared, series: Sequence[tuple[str, list[Column]]], size: Size
) -> SafeString:
    """One size of the comparison chart."""
    drawn = [(label, fitted(columns, size.max_columns)) for label, columns in series]
    top = max((c.avg for _, cols in drawn for c in cols if c.avg is not None), default=None)
    ticks = value_ticks(top) if top is not None else []
    frame = plot_frame(
        size.width, size.height, shared.span, shared.keys, ticks[-1] if ticks else 1.0
    )
    lines = [
        _compare_line(frame, key, cols) for key, (_, cols) in zip(shared.keys, drawn, strict=False)
    ]
    if shared.band and top is not None:
        lines.insert(0, _spread_band(frame, drawn))
    body = [axes(frame, ticks), "".join(lines) if top is not None else no_data(frame)]
    body += [_compare_hits(frame, drawn), legend(frame, shared.keys)]
    desc = _comparison_desc(shared.title, shared.span, drawn)
    note = corner_note(shared.since, frame.short)
    return chart_svg("chart-comparison", frame, shared.id_prefix, shared.title, desc, body, note)
