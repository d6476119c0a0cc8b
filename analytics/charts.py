"""Response-time and availability charts, drawn on the server as inline SVG.

Pure functions of what `analytics.reports` returns; each gives one `<svg>` for a page. They
write no script, no event handler and no `style` attribute, which the site's
Content-Security-Policy would refuse: colours come from classes styled by
`healthmon/static/healthmon/charts.css`, with presentation attributes as a fallback so a chart
stays legible without it. Every string from a user or a probed service (labels, incident ids
and causes) is escaped. Hover details are SVG `<title>` elements.
"""

import itertools
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

Point = Mapping[str, Any]
Span = tuple[float, float]

# A bucket is "up" at three nines, the usual SLA floor, and "down" under 95% (over an hour
# down in a day). Bars of 99% and 100% look alike: the level's colour tells them apart.
UP_AT = 99.9
DEGRADED_AT = 95.0
MAX_SERIES = 10
# Okabe-Ito: told apart under every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# From the fifth series on lines are dashed too: neighbouring hues get close, then repeat.
DASHES = ("6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 2 1 2")
LEVEL_FILL = {"up": PALETTE[2], "degraded": PALETTE[1], "down": PALETTE[5], "nodata": "#999"}
INCIDENT_FILL = PALETTE[3]
NO_DATA = "No data in this period"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DAY = 86_400
TO = "\u2013"  # en dash, between the ends of a range
# Tick steps of the time axis in seconds; a range over two days is labelled in whole days.
TIME_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
DAY_STEPS = (DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY)
# Layout in viewBox units: the title row, y labels, x labels and legend rows.
TOP, LEFT, RIGHT, X_LABELS, LEGEND_ROW = 28, 60, 14, 20, 16
TEXT, GRID = "#666", "#888"  # mid grey: legible on light and dark pages alike
FINEST_BUCKET = 300  # the 5-minute rollup: the span a lone sparkline point is given
PREFIX = re.compile(r"[A-Za-z][\w-]*\Z")


@dataclass(slots=True)
class _Column:
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
class _Frame:
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
        share = min(max((stamp - self.t0) / (self.t1 - self.t0), 0.0), 1.0)
        return self.left + share * (self.right - self.left)

    def y(self, value: float) -> float:
        """The y of a value, clamped to the plot."""
        share = min(max((value - self.y_min) / (self.y_max - self.y_min), 0.0), 1.0)
        return self.bottom - share * (self.bottom - self.top)

    def spans(self, columns: Sequence[_Column]) -> list[Span]:
        """The x extent of each column."""
        return [(self.x(c.t0), self.x(c.t1)) for c in columns]

    def ys(self, values: Sequence[float | None]) -> list[float | None]:
        """The y of each value, None kept so that it leaves a gap."""
        return [None if value is None else self.y(value) for value in values]


@dataclass(frozen=True, slots=True)
class _Key:
    """A legend entry: label, the class shared with what it stands for, swatch colour."""

    label: str
    cls: str
    colour: str
    box: bool = False
    dash: str | None = None


# --- Words and numbers ----------------------------------------------------------------------


def _ms(value: float) -> str:
    """A time in milliseconds as people read it: 0.25 ms, 120 ms, 1.5 s, 1,234 s."""
    if value < 10:
        return f"{value:.2f}".rstrip("0").rstrip(".") + " ms"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.3g} s" if value < 100_000 else f"{value / 1000:,.0f} s"


def _duration(seconds: float) -> str:
    """A length in at most two units: 43 s, 5 min 12 s, 24 h, 3 d 4 h (hours up to 48)."""
    whole = round(seconds)
    units = (("d", DAY, "h", 3600, 2 * DAY), ("h", 3600, "min", 60, 3600), ("min", 60, "s", 1, 60))
    for unit, size, sub, sub_size, least in units:
        if whole >= least:
            big, rest = divmod(whole, size)
            return f"{big} {unit}" + (f" {rest // sub_size} {sub}" if rest // sub_size else "")
    return f"{whole} s"


def _percent(value: float) -> str:
    """A share rounded down, so that 99.9996% never reads as 100%."""
    return f"{math.floor(value * 1000) / 1000:g}%"


def _utc(stamp: float) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


def _clock(moment: datetime) -> str:
    # Fields, not strftime: three times faster, and there is one per column.
    clock = f"{moment.hour:02}:{moment.minute:02}"
    return f"{clock}:{moment.second:02}" if moment.second else clock


def _day(moment: datetime) -> str:
    # Month names from a table, not strftime: the process locale must not change a page.
    return f"{MONTHS[moment.month - 1]} {moment.day}"


def _moment(stamp: float) -> str:
    return f"{_utc(stamp):%Y-%m-%d %H:%M}"


def _span(t0: float, t1: float, short: bool) -> str:
    """A column's time span, for its hover detail."""
    start, end = _utc(t0), _utc(t1)
    if short:
        return f"{_clock(start)}{TO}{_clock(end)} UTC"
    if (t1 - t0) % DAY == 0 and t0 % DAY == 0:
        last = _utc(t1 - DAY)
        return _day(start) if last == start else f"{_day(start)}{TO}{_day(last)}"
    return f"{_day(start)} {_clock(start)}{TO}{_clock(end)} UTC"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _short(label: str, size: int = 40) -> str:
    return label if len(label) <= size else label[: size - 1] + "\u2026"


def _figures(column: _Column) -> list[str]:
    named = (("avg", column.avg), ("min", column.low), ("max", column.high), ("p95", column.p95))
    return [f"{name} {_ms(value)}" for name, value in named if value is not None]


# --- Scales and data ------------------------------------------------------------------------


def _value_ticks(top: float, target: int = 5) -> list[float]:
    """Round ticks from 0 to at least `top`, 1-2-5 steps apart."""
    raw = (top if top > 0 else 1.0) / target
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if raw <= m * base * (1 + 1e-9))
    return [round(i * step, 10) for i in range(math.ceil(raw * target / step - 1e-9) + 1)]


def _time_ticks(frame: _Frame) -> list[float]:
    """Moments to label on the time axis, on round UTC times (weeks on Mondays)."""
    most = max(int((frame.right - frame.left) // 80), 2)
    steps = TIME_STEPS if frame.short else DAY_STEPS
    step = next((s for s in steps if (frame.t1 - frame.t0) / s <= most), steps[-1])
    offset = 4 * DAY if step % (7 * DAY) == 0 else 0  # the epoch was a Thursday
    first = math.ceil((frame.t0 - offset) / step) * step + offset
    return [float(t) for t in range(int(first), int(frame.t1) + 1, step)]


def _slots(times: Sequence[datetime], t0: float, t1: float) -> list[tuple[int, float, float]]:
    """(index, start, end) of the buckets overlapping [t0, t1); a bucket lasts the smallest
    gap between starts (or the range split evenly)."""
    stamps = [moment.timestamp() for moment in times]
    gaps = [b - a for a, b in itertools.pairwise(stamps) if b > a]
    step = min(gaps) if gaps else (t1 - t0) / max(len(stamps), 1)
    return [(i, s, s + step) for i, s in enumerate(stamps) if s + step > t0 and s < t1]


def _merge(chunk: Sequence[_Column]) -> _Column:
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
    return _Column(chunk[0].t0, chunk[-1].t1, avg, low, high, p95, count, failures)


def _columns(points: Sequence[Point], t0: float, t1: float, max_columns: int) -> list[_Column]:
    """The points inside [t0, t1), merged in equal runs when there are over `max_columns`."""
    if max_columns < 1:
        raise ValueError("max_columns must be at least 1")
    ordered = sorted(points, key=lambda point: point["t"])
    columns = []
    for i, start, end in _slots([p["t"] for p in ordered], t0, t1):
        p = ordered[i]
        figures = (p.get("avg_ms"), p.get("min_ms"), p.get("max_ms"), p.get("p95_ms"))
        columns.append(_Column(start, end, *figures, p.get("count", 0), p.get("failures", 0)))
    if len(columns) <= max_columns:
        return columns
    size = _chunk(math.ceil(len(columns) / max_columns), columns[0].t1 - columns[0].t0)
    return [_merge(columns[i : i + size]) for i in range(0, len(columns), size)]


def _chunk(least: int, step: float) -> int:
    """Buckets per column: the least that fits, raised to a round span when one is near, so
    that columns read 12:00-12:05, not 12:00-12:04:30."""
    for seconds in (*TIME_STEPS, *DAY_STEPS):
        size = seconds / step
        if least <= size < 2 * least and size == int(size):
            return int(size)
    return least


def _range(start: datetime, end: datetime) -> Span:
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be aware datetimes")
    if end <= start:
        raise ValueError("end must be after start")
    return start.timestamp(), end.timestamp()


# --- SVG pieces -----------------------------------------------------------------------------


def _tag(name: str, inner: str = "", /, **attrs: object) -> str:
    """One element. `cls` is written `class` and `_` in a name `-`; strings are escaped,
    floats rounded to 0.1; `inner` is markup built here."""
    text = "".join(
        f' {"class" if key == "cls" else key.replace("_", "-")}="'
        + (f"{value:.1f}" if isinstance(value, float) else escape(value))
        + '"'
        for key, value in attrs.items()
    )
    return f"<{name}{text}>{inner}</{name}>" if inner else f"<{name}{text}/>"


def _stroke(colour: str, width: float, dash: str | None = None) -> dict[str, object]:
    """Presentation attributes of a line, the fallback for its class's CSS."""
    dashes = {"stroke_dasharray": dash} if dash else {}
    return dict(fill="none", stroke=colour, stroke_width=width, stroke_linejoin="round", **dashes)


def _box(x: float, y: float, width: float, height: float) -> dict[str, object]:
    return {"x": x, "y": y, "width": max(width, 0.5), "height": height}


def _title(text: str) -> str:
    return f"<title>{escape(text)}</title>"


def _safe(markup: str) -> SafeString:
    return mark_safe(markup)  # noqa: S308 - built by _tag and _title, which escape every value


def _svg(
    kind: str, frame: _Frame, id_prefix: str | None, title: str, desc: str, body: list[str]
) -> SafeString:
    """The whole chart: accessible name and description, visible title, then the body."""
    if id_prefix is not None and not PREFIX.match(id_prefix):
        raise ValueError("id_prefix must be a letter followed by letters, digits, _ or -")
    # Several charts share a page: ids must differ, hence a random prefix by default.
    pid = id_prefix or f"chart-{uuid.uuid4().hex[:12]}"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" id="{pid}"'
        f' viewBox="0 0 {frame.width} {frame.height}" role="img"'
        f' aria-labelledby="{pid}-title {pid}-desc" font-family="system-ui, sans-serif"'
        f' font-size="11"><title id="{pid}-title">{escape(title)}</title>'
        f'<desc id="{pid}-desc">{escape(desc)}</desc>'
    )
    caption = _tag(
        "text", escape(title), cls="chart-title", x=LEFT, y=16, fill=TEXT, font_weight=600
    )
    note = _tag("text", "UTC", cls="axis-note", x=frame.right, y=16, fill=TEXT, text_anchor="end")
    return _safe(head + caption + note + "".join(body) + "</svg>")


def _axes(frame: _Frame, y_ticks: Sequence[float], label: Callable[[float], str] = _ms) -> str:
    """Gridlines, both axes' tick labels and the axis lines."""
    grid, xs, ys = [], [], []
    for value in y_ticks:
        y = frame.y(value)
        grid.append(_tag("line", x1=frame.left, x2=frame.right, y1=y, y2=y))
        ys.append(
            _tag("text", escape(label(value)), x=frame.left - 6, y=y + 4, data_value=f"{value:g}")
        )
    for stamp in _time_ticks(frame):
        x = frame.x(stamp)
        grid.append(_tag("line", x1=x, x2=x, y1=frame.top, y2=frame.bottom))
        text = f"{_utc(stamp):%H:%M}" if frame.short else _day(_utc(stamp))
        # Labels at the ends lean inwards: clear of the y labels and of the edge.
        anchor = "start" if x - frame.left < 16 else "end" if frame.right - x < 16 else "middle"
        xs.append(_tag("text", text, x=x, y=frame.bottom + 14, text_anchor=anchor))
    edges = f"M{frame.left:.1f},{frame.top:.1f}V{frame.bottom:.1f}H{frame.right:.1f}"
    return (
        _tag("g", "".join(grid), cls="grid", stroke=GRID, stroke_opacity="0.3")
        + _tag("g", "".join(ys), cls="axis axis-y", fill=TEXT, text_anchor="end")
        + _tag("g", "".join(xs), cls="axis axis-x", fill=TEXT)
        + _tag("path", cls="axis-line", fill="none", stroke=GRID, d=edges)
    )


def _legend_places(labels: Sequence[str], width: int) -> list[tuple[float, int]]:
    """(x, row) of each legend entry, wrapping at the chart's width."""
    x, row, places = float(LEFT), 0, []
    for label in labels:
        size = 42 + 6.2 * len(_short(label))  # swatch, gaps, an average glyph's width
        if x + size > width - RIGHT and x > LEFT:
            x, row = float(LEFT), row + 1
        places.append((x, row))
        x += size
    return places


def _legend(frame: _Frame, keys: Sequence[_Key]) -> str:
    """Each key's swatch and label, in rows under the x axis."""
    entries = []
    for key, (x, row) in zip(
        keys, _legend_places([k.label for k in keys], frame.width), strict=True
    ):
        y = frame.bottom + X_LABELS + 10.0 + row * LEGEND_ROW
        if key.box:
            swatch = _tag("rect", cls=key.cls, **_box(x, y - 5, 20, 10), fill=key.colour)
        else:
            line = {"x1": x, "x2": x + 20, "y1": y, "y2": y}
            swatch = _tag("line", cls=f"line {key.cls}", **line, **_stroke(key.colour, 2, key.dash))
        text = _tag("text", escape(_short(key.label)), x=x + 26, y=y + 4, fill=TEXT)
        full = _title(key.label) if _short(key.label) != key.label else ""
        entries.append(_tag("g", full + swatch + text, cls="key"))
    return _tag("g", "".join(entries), cls="legend")


def _frame(width: int, height: int, span: Span, keys: Sequence[_Key], y_max: float) -> _Frame:
    """The plot area left once the title row, x labels and legend rows are set aside."""
    width, height = int(width), int(height)  # they are written into the markup unescaped
    places = _legend_places([key.label for key in keys], width)
    rows = places[-1][1] + 1 if places else 0
    bottom = max(height - X_LABELS - rows * LEGEND_ROW - 6.0, TOP + 20.0)
    return _Frame(width, height, bottom, *span, y_max=y_max, right=float(width - RIGHT))


def _no_data(frame: _Frame) -> str:
    x, y = (frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2
    return _tag("text", NO_DATA, cls="nodata-message", x=x, y=y, fill=TEXT, text_anchor="middle")


def _runs(present: Sequence[bool]) -> list[range]:
    """Index ranges of consecutive present values: a missing one leaves a gap."""
    runs, begin = [], None
    for i, ok in enumerate([*present, False]):
        if ok and begin is None:
            begin = i
        elif not ok and begin is not None:
            runs.append(range(begin, i))
            begin = None
    return runs


def _line(spans: Sequence[Span], ys: Sequence[float | None]) -> str:
    """Path data through each column's centre, one subpath per run of values."""
    parts = []
    for run in _runs([y is not None for y in ys]):
        coords = [((spans[i][0] + spans[i][1]) / 2, ys[i]) for i in run]
        if len(run) == 1:  # a lone point would draw nothing: span its column instead
            coords = [(spans[run[0]][0], ys[run[0]]), (spans[run[0]][1], ys[run[0]])]
        parts.append("M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in coords))
    return "".join(parts)


def _band(spans: Sequence[Span], lows: list[float | None], highs: list[float | None]) -> str:
    """Path data of the min-max band: a closed shape per run where both are known."""
    parts = []
    for run in _runs(
        [lo is not None and hi is not None for lo, hi in zip(lows, highs, strict=True)]
    ):
        upper = _line([spans[i] for i in run], [highs[i] for i in run])
        # Back along the lows, each span turned round so that a lone column closes as a box.
        back = [(spans[i][1], spans[i][0]) for i in reversed(run)]
        parts.append(upper + "L" + _line(back, [lows[i] for i in reversed(run)])[1:] + "Z")
    return "".join(parts)


def _hits(frame: _Frame, spans: Sequence[Span], details: Sequence[str]) -> str:
    """An invisible rect per column, its `<title>` the column's hover detail."""
    height = frame.bottom - frame.top
    rects = [
        _tag("rect", _title(detail), cls="hit", **_box(x0, frame.top, x1 - x0, height))
        for (x0, x1), detail in zip(spans, details, strict=True)
    ]
    # Transparent, not "none": an unpainted fill would not catch the pointer.
    return _tag("g", "".join(rects), cls="hits", fill="transparent")


# --- Response time --------------------------------------------------------------------------

RESPONSE_LINES = (  # series, stroke colour, width, dash
    ("min", PALETTE[4], 1, None),
    ("max", PALETTE[4], 1, None),
    ("avg", PALETTE[0], 2, None),
    ("p95", PALETTE[5], 1.5, "4 3"),
)
RESPONSE_KEYS = (
    _Key(f"min{TO}max", "band", PALETTE[0], box=True),
    _Key("average", "avg", PALETTE[0]),
    _Key("95th percentile", "p95", PALETTE[5], dash="4 3"),
)


def _column_detail(column: _Column, short: bool) -> str:
    """'14:05-14:10 UTC — avg 120 ms, min 80 ms, max 300 ms, p95 250 ms, 10 checks, 1 failed'."""
    head = _span(column.t0, column.t1, short)
    if not column.count and column.avg is None:
        return f"{head} — no checks"
    parts = [*_figures(column), _count(column.count, "check")]
    if column.failures:
        parts.append(f"{column.failures:,} failed")
    return f"{head} — " + ", ".join(parts)


def _response_desc(title: str, span: Span, columns: Sequence[_Column]) -> str:
    """The chart's figures in words, for whoever cannot see it."""
    head = f"{title}, {_moment(span[0])} to {_moment(span[1])} UTC"
    total = _merge(columns) if columns else None
    if total is None or total.avg is None:
        failed = f" ({total.count:,} checks, all failed)" if total and total.count else ""
        return f"{head}: no data in this period{failed}."
    gaps = sum(column.avg is None for column in columns)
    return (
        f"{head}: {', '.join(_figures(total))}; {total.count:,} checks, {total.failures:,}"
        f" failed; {gaps} of {_count(len(columns), 'interval')} without a successful check."
    )


def _response_lines(frame: _Frame, columns: Sequence[_Column]) -> str:
    """The min-max band, then the min, max, average and dashed p95 lines over it."""
    spans = frame.spans(columns)
    values = {
        "min": frame.ys([c.low for c in columns]),
        "max": frame.ys([c.high for c in columns]),
        "avg": frame.ys([c.avg for c in columns]),
        "p95": frame.ys([c.p95 for c in columns]),
    }
    band = _band(spans, values["min"], values["max"])
    paths = [
        _tag("path", cls="band", data_series="band", d=band, fill=PALETTE[0], fill_opacity="0.15")
    ]
    for name, colour, width, dash in RESPONSE_LINES:
        d = _line(spans, values[name])
        stroke = _stroke(colour, width, dash)
        paths.append(_tag("path", cls=f"line {name}", data_series=name, d=d, **stroke))
    return "".join(paths)


def response_time_chart(
    points: Sequence[Point],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time",
    width: int = 960,
    height: int = 280,
    max_columns: int = 320,
    id_prefix: str | None = None,
) -> SafeString:
    """Draw one series' response time: min-max band, min, max, average and p95 lines.

    Over `max_columns` points are merged into that many columns first, so a day of 30 s
    buckets draws as fast as a few hundred; missing figures leave gaps, never zeros.
    """
    span = _range(start, end)
    columns = _columns(points, *span, max_columns)
    top = max((v for c in columns for v in (c.high, c.p95, c.avg) if v is not None), default=None)
    ticks = _value_ticks(top) if top is not None else []
    frame = _frame(width, height, span, RESPONSE_KEYS, ticks[-1] if ticks else 1.0)
    lines = _response_lines(frame, columns) if top is not None else _no_data(frame)
    details = [_column_detail(c, frame.short) for c in columns]
    body = [_axes(frame, ticks), lines, _hits(frame, frame.spans(columns), details)]
    body.append(_legend(frame, RESPONSE_KEYS))
    desc = _response_desc(title, span, columns)
    return _svg("chart-response", frame, id_prefix, title, desc, body)


# --- Availability ---------------------------------------------------------------------------

AVAILABILITY_KEYS = (
    _Key(f"\u2265 {UP_AT:g}%", "up", LEVEL_FILL["up"], box=True),
    _Key(f"{DEGRADED_AT:g}{TO}{UP_AT:g}%", "degraded", LEVEL_FILL["degraded"], box=True),
    _Key(f"< {DEGRADED_AT:g}%", "down", LEVEL_FILL["down"], box=True),
    _Key("no data", "nodata", LEVEL_FILL["nodata"], box=True),
    _Key("incident", "incident", INCIDENT_FILL, box=True),
)


def _level(uptime: float | None) -> str:
    if uptime is None:
        return "nodata"
    return "up" if uptime >= UP_AT else "degraded" if uptime >= DEGRADED_AT else "down"


def _bar(frame: _Frame, bucket: Point, s: float, e: float) -> str:
    """A bar as tall as the bucket's uptime, coloured by its level."""
    uptime, down = bucket.get("uptime"), bucket.get("downtime_s") or 0.0
    x0, x1 = frame.x(s), frame.x(e)
    gap = 1.0 if x1 - x0 > 3 else 0.0  # bars apart only where they are wide enough
    # A bucket down throughout keeps a sliver, so that its colour still shows.
    top = frame.top if uptime is None else min(frame.y(uptime), frame.bottom - 2)
    detail = "no data" if uptime is None else f"uptime {_percent(uptime)}"
    detail += f", down {_duration(down)}" if down else ""
    paint = {
        "fill": LEVEL_FILL[_level(uptime)],
        **({"fill_opacity": "0.25"} if uptime is None else {}),
    }
    box = _box(x0 + gap / 2, top, x1 - x0 - gap, frame.bottom - top)
    title = _title(f"{_span(s, e, frame.short)} — {detail}")
    return _tag("rect", title, cls=f"bar {_level(uptime)}", **box, **paint)


def _incident_detail(incident: Point) -> str:
    """Start, end or 'ongoing', duration and cause of an incident."""
    began, ended = incident["started_at"], incident.get("resolved_at")
    text = f"Incident from {_moment(began.timestamp())} UTC"
    text += f" to {_moment(ended.timestamp())} UTC" if ended else ", ongoing"
    seconds = incident.get("duration_seconds")
    if seconds is None and ended:
        seconds = (ended - began).total_seconds()
    text += f" ({_duration(seconds)})" if seconds is not None else ""
    return text + (f": {incident['cause']}" if incident.get("cause") else "")


def _incident_span(incident: Point, t1: float) -> Span:
    """Start and end of an incident; an open one lasts to the chart's end."""
    ended = incident.get("resolved_at")
    return incident["started_at"].timestamp(), ended.timestamp() if ended else t1


def _incident_band(frame: _Frame, incident: Point) -> str:
    """A translucent band across the plot, clipped to the chart's range."""
    s, e = _incident_span(incident, frame.t1)
    x0, x1 = frame.x(s), frame.x(e)
    if x1 - x0 < 2:  # a short incident stays visible
        x0 = min(x0, frame.right - 2)
        x1 = x0 + 2
    box = _box(x0, frame.top, x1 - x0, frame.bottom - frame.top)
    # Outlined as well as tinted: a tint alone fades into the bars under it.
    paint = {"fill": INCIDENT_FILL, "fill_opacity": "0.3", "stroke": INCIDENT_FILL}
    title = _title(_incident_detail(incident))
    return _tag("rect", title, cls="incident", data_incident=str(incident["id"]), **box, **paint)


def _availability_desc(
    title: str, span: Span, buckets: Sequence[Point], incidents: Sequence[Point]
) -> str:
    """Intervals at the target, lowest uptime, downtime and incidents, in words."""
    known = [b["uptime"] for b in buckets if b.get("uptime") is not None]
    parts = ["no data in this period"]
    if known:
        parts = [
            f"{len(known)} of {_count(len(buckets), 'interval')} with data",
            f"{sum(u >= UP_AT for u in known)} at or above {UP_AT:g}%",
            f"lowest {_percent(min(known))}",
            f"downtime {_duration(sum(b.get('downtime_s') or 0.0 for b in buckets))}",
        ]
    ongoing = sum(1 for i in incidents if not i.get("resolved_at"))
    parts.append(_count(len(incidents), "incident") + (f" ({ongoing} ongoing)" if ongoing else ""))
    head = f"{title}, {_moment(span[0])} to {_moment(span[1])} UTC"
    return f"{head}: " + "; ".join(parts) + "."


def availability_chart(
    buckets: Sequence[Point],
    incidents: Sequence[Point],
    *,
    start: datetime,
    end: datetime,
    title: str = "Availability",
    width: int = 960,
    height: int = 200,
    id_prefix: str | None = None,
) -> SafeString:
    """Draw uptime per bucket as bars coloured by level, incidents as bands over them.

    Levels (classes): `up` at or above 99.9%, `degraded` at or above 95%, `down` below,
    `nodata` where nothing was watched.
    """
    span = _range(start, end)
    frame = _frame(width, height, span, AVAILABILITY_KEYS, 100.0)
    ordered = sorted(buckets, key=lambda bucket: bucket["t"])
    slots = _slots([bucket["t"] for bucket in ordered], *span)
    inside = [ordered[i] for i, _, _ in slots]
    shown = [i for i in incidents if _overlaps(_incident_span(i, span[1]), span)]
    bars = "".join(_bar(frame, ordered[i], s, e) for i, s, e in slots)
    bands = "".join(_incident_band(frame, incident) for incident in shown)
    body = [
        _axes(frame, _value_ticks(100.0), lambda value: f"{value:g}%"),
        _tag("g", bars, cls="bars"),
        _tag("g", bands, cls="incidents"),
        _legend(frame, AVAILABILITY_KEYS),
    ]
    if all(bucket.get("uptime") is None for bucket in inside):
        body.append(_no_data(frame))
    desc = _availability_desc(title, span, inside, shown)
    return _svg("chart-availability", frame, id_prefix, title, desc, body)


def _overlaps(first: Span, second: Span) -> bool:
    return first[1] > second[0] and first[0] < second[1]


# --- Comparison -----------------------------------------------------------------------------


def _series_key(index: int, label: str) -> _Key:
    dash = DASHES[(index - 4) % len(DASHES)] if index >= 4 else None
    return _Key(label, f"series-{index}", PALETTE[index % len(PALETTE)], dash=dash)


def _compare_line(frame: _Frame, key: _Key, columns: Sequence[_Column]) -> str:
    """One series' average line, tagged with its label."""
    d = _line(frame.spans(columns), frame.ys([c.avg for c in columns]))
    tags = {"cls": f"line compare {key.cls}", "data_series": "compare", "data_label": key.label}
    return _tag("path", **tags, d=d, **_stroke(key.colour, 2, key.dash))


def _compare_hits(frame: _Frame, drawn: Sequence[tuple[str, list[_Column]]]) -> str:
    """Hover details per column: every series' average there."""
    columns: dict[float, tuple[float, list[str]]] = {}
    for label, series in drawn:
        for c in series:
            figure = _ms(c.avg) if c.avg is not None else "no data"
            columns.setdefault(c.t0, (c.t1, []))[1].append(f"{_short(label)}: {figure}")
    ordered = sorted(columns.items())
    spans = [(frame.x(t0), frame.x(t1)) for t0, (t1, _) in ordered]
    details = [f"{_span(t0, t1, frame.short)} — " + "; ".join(lines) for t0, (t1, lines) in ordered]
    return _hits(frame, spans, details)


def _comparison_desc(title: str, span: Span, drawn: Sequence[tuple[str, list[_Column]]]) -> str:
    """Each series' average, min and max, in words."""
    parts = []
    for label, series in drawn:
        total = _merge(series) if series else None
        if total is None or total.avg is None:
            parts.append(f"{label}: no data")
            continue
        extremes = ", ".join(_figures(total)[1:3])
        parts.append(f"{label}: average {_ms(total.avg)}" + (f" ({extremes})" * bool(extremes)))
    head = f"{title}, {_moment(span[0])} to {_moment(span[1])} UTC, {len(drawn)} series"
    return f"{head}. " + "; ".join(parts) + "."


def comparison_chart(
    series: Sequence[tuple[str, Sequence[Point]]],
    *,
    start: datetime,
    end: datetime,
    title: str = "Response time comparison",
    width: int = 960,
    height: int = 320,
    max_columns: int = 320,
    id_prefix: str | None = None,
) -> SafeString:
    """Overlay the average response time of up to ten `(label, points)` series."""
    if len(series) > MAX_SERIES:
        raise ValueError(f"at most {MAX_SERIES} series can be compared")
    span = _range(start, end)
    drawn = [(label, _columns(points, *span, max_columns)) for label, points in series]
    keys = [_series_key(i, label) for i, (label, _) in enumerate(drawn)]
    top = max((c.avg for _, cols in drawn for c in cols if c.avg is not None), default=None)
    ticks = _value_ticks(top) if top is not None else []
    frame = _frame(width, height, span, keys, ticks[-1] if ticks else 1.0)
    lines = [_compare_line(frame, key, cols) for key, (_, cols) in zip(keys, drawn, strict=True)]
    body = [_axes(frame, ticks), "".join(lines) if top is not None else _no_data(frame)]
    body += [_compare_hits(frame, drawn), _legend(frame, keys)]
    desc = _comparison_desc(title, span, drawn)
    return _svg("chart-comparison", frame, id_prefix, title, desc, body)


# --- Sparkline ------------------------------------------------------------------------------


def sparkline(
    points: Sequence[Point],
    *,
    width: int = 120,
    height: int = 28,
    start: datetime | None = None,
    end: datetime | None = None,
) -> SafeString:
    """Draw a tiny average response-time line with no axes, for tables and cards.

    The range defaults to the points' own span. The line is scaled to its own low and high
    so that its shape shows; the accessible label gives the figures.
    """
    width, height = int(width), int(height)  # they are written into the markup unescaped
    stamps = sorted(p["t"].timestamp() for p in points) or [0.0]
    gaps = [b - a for a, b in itertools.pairwise(stamps) if b > a]
    t0 = start.timestamp() if start else stamps[0]
    t1 = end.timestamp() if end else stamps[-1] + min(gaps, default=FINEST_BUCKET)
    columns = _columns(points, t0, t1, width) if points and t1 > t0 else []
    total = _merge(columns) if columns else None
    label, path = "No data", ""
    if total is not None and total.avg is not None:
        averages = [c.avg for c in columns if c.avg is not None]
        lo, hi = min(averages), max(averages)
        lo, hi = (lo, hi) if hi > lo else (lo - 1, lo + 1)  # a flat line sits in the middle
        frame = _Frame(width, height, height - 2.0, t0, t1, hi, lo, 1.0, 2.0, width - 1.0)
        d = _line(frame.spans(columns), frame.ys([c.avg for c in columns]))
        path = _tag("path", cls="line avg", d=d, **_stroke(PALETTE[0], 1.5))
        low, high = total.low if total.low is not None else lo, total.high or hi
        label = (
            f"Average response time over {_duration(t1 - t0)}: {_ms(total.avg)}"
            f" (min {_ms(low)}, max {_ms(high)})"
        )
    return _safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sparkline" viewBox="0 0 {width}'
        f' {height}" width="{width}" height="{height}" role="img"'
        f' aria-label="{escape(label)}">{_title(label)}{path}</svg>'
    )
