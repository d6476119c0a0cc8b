"""The response-time chart: min-max band, min, max, average and p95 lines."""

from collections.abc import Sequence
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
from analytics.charts.slow import slow_bands, slow_keys
from analytics.charts.svg import (
    PALETTE,
    axes,
    band_data,
    centres,
    chart_svg,
    coordinates,
    corner_note,
    hits,
    legend,
    line_data,
    no_data,
    plot_frame,
    stroke_attrs,
    tag,
)
from analytics.charts.words import TO, count, figures, period, when
from analytics.rows import SeriesPoint
from healthmon.intervals import Interval

RESPONSE_LINES = (  # series, stroke colour, width, dash
    ("min", PALETTE[4], 1, None),
    ("max", PALETTE[4], 1, None),
    ("avg", PALETTE[0], 2, None),
    ("p95", PALETTE[5], 1.5, "4 3"),
)
RESPONSE_KEYS = (
    Key(f"min{TO}max", "band", PALETTE[0], box=True),
    Key("average", "avg", PALETTE[0]),
    Key("95th percentile", "p95", PALETTE[5], dash="4 3"),
)


def _column_detail(column: Column, short: bool) -> str:
    """'14:05-14:10 UTC — avg 120 ms, min 80 ms, max 300 ms, p95 250 ms, 10 checks, 1 failed'."""
    head = period(column.t0, column.t1, short)
    if not column.count and column.avg is None:
        return f"{head} — no checks"
    parts = [*figures(column), count(column.count, "check")]
    if column.failures:
        parts.append(f"{column.failures:,} failed")
    return f"{head} — " + ", ".join(parts)


def _response_desc(title: str, span: Span, columns: Sequence[Column]) -> str:
    """The chart's figures in words, for whoever cannot see it."""
    head = f"{title}, {when(span[0])} to {when(span[1])} UTC"
    total = merge(columns) if columns else None
    if total is None or total.avg is None:
        failed = f" ({total.count:,} checks, all failed)" if total and total.count else ""
        return f"{head}: no data in this period{failed}."
    gaps = sum(column.avg is None for column in columns)
    return (
        f"{head}: {', '.join(figures(total))}; {total.count:,} checks, {total.failures:,}"
        f" failed; {gaps} of {count(len(columns), 'interval')} without a successful check."
    )


def _response_lines(frame: Frame, columns: Sequence[Column]) -> str:
    """The min-max band, then the min, max, average and dashed p95 lines over it."""
    spans = frame.spans(columns)
    xs = centres(spans)  # written once for the band and the four lines
    values = {
        "min": coordinates(frame.ys([c.low for c in columns])),
        "max": coordinates(frame.ys([c.high for c in columns])),
        "avg": coordinates(frame.ys([c.avg for c in columns])),
        "p95": coordinates(frame.ys([c.p95 for c in columns])),
    }
    band = band_data(spans, xs, values["min"], values["max"])
    paths = [
        tag("path", cls="band", data_series="band", d=band, fill=PALETTE[0], fill_opacity="0.15")
    ]
    for name, colour, width, dash in RESPONSE_LINES:
        d = line_data(spans, xs, values[name])
        stroke = stroke_attrs(colour, width, dash)
        paths.append(tag("path", cls=f"line {name}", data_series=name, d=d, **stroke))
    return "".join(paths)


def response_time_chart(
    points: Sequence[SeriesPoint],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time",
    width: int = 960,
    height: int = 280,
    max_columns: int = 320,
    id_prefix: str | None = None,
    since: datetime | None = None,
    degraded: Sequence[Interval] = (),
) -> SafeString:
    """Draw one series' response time: min-max band, min, max, average and p95 lines, over
    amber bands where the endpoint was degraded.

    Over `max_columns` points are merged into that many columns first, so a day of 30 s
    buckets draws as fast as a few hundred; missing figures leave gaps, never zeros.
    """
    size = Size(width, height, max_columns)
    return response_time_charts(
        points,
        [size],
        start=start,
        end=end,
        title=title,
        since=since,
        degraded=degraded,
        id_prefix=id_prefix,
    )[0]


def response_time_charts(
    points: Sequence[SeriesPoint],
    sizes: Sequence[Size],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time",
    since: datetime | None = None,
    degraded: Sequence[Interval] = (),
    id_prefix: str | None = None,
) -> list[SafeString]:
    """`response_time_chart` at each size (a page's wide and phone drawings), the points
    bucketed once for all of them."""
    if id_prefix is not None and len(sizes) > 1:
        raise ValueError("one id_prefix cannot name several charts")
    span = time_range(start, end)
    columns = bucketed(points, *span)
    keys = slow_keys(RESPONSE_KEYS, degraded)
    charts = []
    for size in sizes:
        fit = fitted(columns, size.max_columns)
        top = max((v for c in fit for v in (c.high, c.p95, c.avg) if v is not None), default=None)
        ticks = value_ticks(top) if top is not None else []
        frame = plot_frame(size.width, size.height, span, keys, ticks[-1] if ticks else 1.0)
        lines = _response_lines(frame, fit) if top is not None else no_data(frame)
        details = [_column_detail(c, frame.short) for c in fit]
        body = [axes(frame, ticks), slow_bands(frame, degraded), lines]
        body += [hits(frame, frame.spans(fit), details), legend(frame, keys)]
        desc = _response_desc(title, span, fit)
        note = corner_note(since, frame.short)
        charts.append(chart_svg("chart-response", frame, id_prefix, title, desc, body, note))
    return charts
