"""SVG elements: tags, the chart's frame, axes, legend, lines, band and hover areas."""

import html
import re
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from django.utils.safestring import SafeString, mark_safe

from analytics.charts.scales import (
    LEFT,
    LEGEND_ROW,
    RIGHT,
    TOP,
    X_LABELS,
    Frame,
    Key,
    Span,
    time_ticks,
)
from analytics.charts.words import day, ms, shorten, utc

# Okabe-Ito: told apart under every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
NO_DATA = "No data in this period"
TEXT, GRID = "#666", "#888"  # mid grey: legible on light and dark pages alike
GLYPH = 6.2  # an average glyph's width at the charts' 11-unit font
TITLE_GLYPH = 8.2  # and in the title's 13-unit bold (charts.css)
PREFIX = re.compile(r"[A-Za-z][\w-]*\Z")


def escape(value: object) -> str:
    """What Django's `escape` writes (`&`, `<`, `>`, `"` and `'` as entities), without its
    lazy-string check and `SafeString` for each of the thousands of values a chart holds."""
    return html.escape(str(value))


# Attribute names as written, and ` name="value"` of the strings charts repeat (classes,
# colours, opacities): a chart writes them thousands of times, each escaped once here. Long
# strings (paths) are not kept, nor more than PAIRS_KEPT pairs in all.
_NAMES: dict[str, str] = {}
_PAIRS: dict[tuple[str, str], str] = {}
PAIRS_KEPT = 4096
KEPT_LENGTH = 64


def _name(key: str) -> str:
    """A keyword as an attribute's name: `cls` is `class`, `_` is `-`."""
    name = _NAMES.get(key)
    if name is None:
        name = _NAMES[key] = "class" if key == "cls" else key.replace("_", "-")
    return name


def _pair(key: str, value: object) -> str:
    """` name="value"` of a value other than a float, escaped (and kept when it is short)."""
    pair = f' {_name(key)}="{html.escape(str(value))}"'
    if type(value) is str and len(value) <= KEPT_LENGTH and len(_PAIRS) < PAIRS_KEPT:
        _PAIRS[key, value] = pair
    return pair


def tag(name: str, inner: str = "", /, **attrs: object) -> str:
    """One element. `cls` is written `class` and `_` in a name `-`; strings are escaped,
    floats rounded to 0.1; `inner` is markup built here."""
    parts = [f"<{name}"]
    for key, value in attrs.items():
        if isinstance(value, float):
            parts.append(f' {_NAMES.get(key) or _name(key)}="{value:.1f}"')
        elif type(value) is str and (key, value) in _PAIRS:
            parts.append(_PAIRS[key, value])
        else:
            parts.append(_pair(key, value))
    parts.append(f">{inner}</{name}>" if inner else "/>")
    return "".join(parts)


def number(value: float) -> str:
    """A number as `tag` writes it: a float rounded to 0.1, anything else as it is."""
    return f"{value:.1f}" if isinstance(value, float) else html.escape(str(value))


def stroke_attrs(colour: str, width: float, dash: str | None = None) -> dict[str, object]:
    """Presentation attributes of a line, the fallback for its class's CSS."""
    dashes = {"stroke_dasharray": dash} if dash else {}
    return dict(fill="none", stroke=colour, stroke_width=width, stroke_linejoin="round", **dashes)


def box_attrs(x: float, y: float, width: float, height: float) -> dict[str, object]:
    return {"x": x, "y": y, "width": max(width, 0.5), "height": height}


def title_tag(text: str) -> str:
    return f"<title>{escape(text)}</title>"


def safe(markup: str) -> SafeString:
    return mark_safe(markup)  # noqa: S308 - built by tag and title_tag, which escape every value


def corner_note(since: datetime | None, short: bool) -> str:
    """What the top right corner says: the time zone, and where a young endpoint's chart
    starts (its first check) rather than at the period's start."""
    if since is None:
        return "UTC"
    moment = utc(since.timestamp())
    moment_text = f"{moment:%H:%M}" if short else f"{day(moment)} {moment:%H:%M}"
    return f"since {moment_text} UTC (first check)"


def chart_svg(
    kind: str,
    frame: Frame,
    id_prefix: str | None,
    title: str,
    desc: str,
    body: list[str],
    note: str = "UTC",
) -> SafeString:
    """The whole chart: accessible name and description, visible title, then the body.

    The visible title is cut to the room the corner note leaves it, or left out where that
    is too little to read (the whole title stays the chart's accessible name)."""
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
    room = int((frame.right - LEFT - GLYPH * len(note) - 16) / TITLE_GLYPH)
    caption = ""
    if room >= 8:
        shown = escape(shorten(title, room))
        caption = tag("text", shown, cls="chart-title", x=LEFT, y=16, fill=TEXT, font_weight=600)
    corner = tag(
        "text", escape(note), cls="axis-note", x=frame.right, y=16, fill=TEXT, text_anchor="end"
    )
    return safe(head + caption + corner + "".join(body) + "</svg>")


def axes(frame: Frame, y_ticks: Sequence[float], label: Callable[[float], str] = ms) -> str:
    """Gridlines, both axes' tick labels and the axis lines."""
    grid, xs, ys = [], [], []
    for value in y_ticks:
        y = frame.y(value)
        grid.append(tag("line", x1=frame.left, x2=frame.right, y1=y, y2=y))
        ys.append(
            tag("text", escape(label(value)), x=frame.left - 6, y=y + 4, data_value=f"{value:g}")
        )
    for stamp in time_ticks(frame):
        x = frame.x(stamp)
        grid.append(tag("line", x1=x, x2=x, y1=frame.top, y2=frame.bottom))
        text = f"{utc(stamp):%H:%M}" if frame.short else day(utc(stamp))
        # Labels at the ends lean inwards: clear of the y labels and of the edge.
        anchor = "start" if x - frame.left < 16 else "end" if frame.right - x < 16 else "middle"
        xs.append(tag("text", text, x=x, y=frame.bottom + 14, text_anchor=anchor))
    edges = f"M{frame.left:.1f},{frame.top:.1f}V{frame.bottom:.1f}H{frame.right:.1f}"
    return (
        tag("g", "".join(grid), cls="grid", stroke=GRID, stroke_opacity="0.3")
        + tag("g", "".join(ys), cls="axis axis-y", fill=TEXT, text_anchor="end")
        + tag("g", "".join(xs), cls="axis axis-x", fill=TEXT)
        + tag("path", cls="axis-line", fill="none", stroke=GRID, d=edges)
    )


def _legend_places(labels: Sequence[str], width: int) -> list[tuple[float, int]]:
    """(x, row) of each legend entry, wrapping at the chart's width."""
    x, row, places = float(LEFT), 0, []
    for label in labels:
        size = 42 + GLYPH * len(shorten(label))  # swatch, gaps and the label
        if x + size > width - RIGHT and x > LEFT:
            x, row = float(LEFT), row + 1
        places.append((x, row))
        x += size
    return places


def legend(frame: Frame, keys: Sequence[Key]) -> str:
    """Each key's swatch and label, in rows under the x axis."""
    entries = []
    for key, (x, row) in zip(
        keys, _legend_places([k.label for k in keys], frame.width), strict=True
    ):
        y = frame.bottom + X_LABELS + 10.0 + row * LEGEND_ROW
        if key.box:
            swatch = tag("rect", cls=key.cls, **box_attrs(x, y - 5, 20, 10), fill=key.colour)
        else:
            line = {"x1": x, "x2": x + 20, "y1": y, "y2": y}
            swatch = tag(
                "line", cls=f"line {key.cls}", **line, **stroke_attrs(key.colour, 2, key.dash)
            )
        text = tag("text", escape(shorten(key.label)), x=x + 26, y=y + 4, fill=TEXT)
        full = title_tag(key.label) if shorten(key.label) != key.label else ""
        entries.append(tag("g", full + swatch + text, cls="key"))
    return tag("g", "".join(entries), cls="legend")


def plot_frame(width: int, height: int, span: Span, keys: Sequence[Key], y_max: float) -> Frame:
    """The plot area left once the title row, x labels and legend rows are set aside."""
    width, height = int(width), int(height)  # they are written into the markup unescaped
    places = _legend_places([key.label for key in keys], width)
    rows = places[-1][1] + 1 if places else 0
    bottom = max(height - X_LABELS - rows * LEGEND_ROW - 6.0, TOP + 20.0)
    return Frame(width, height, bottom, *span, y_max=y_max, right=float(width - RIGHT))


def no_data(frame: Frame) -> str:
    x, y = (frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2
    return tag("text", NO_DATA, cls="nodata-message", x=x, y=y, fill=TEXT, text_anchor="middle")


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


def centres(spans: Sequence[Span]) -> list[str]:
    """Each column's centre as path data writes it: a chart's lines share them."""
    return [f"{(x0 + x1) / 2:.1f}" for x0, x1 in spans]


def coordinates(values: Sequence[float | None]) -> list[str | None]:
    """Each value as path data writes it (to 0.1), None kept: a line and a band share them."""
    return [None if value is None else f"{value:.1f}" for value in values]


def line_path(spans: Sequence[Span], ys: Sequence[float | None]) -> str:
    """Path data through each column's centre, one subpath per run of values."""
    return line_data(spans, centres(spans), coordinates(ys))


def line_data(spans: Sequence[Span], xs: Sequence[str], ys: Sequence[str | None]) -> str:
    """`line_path` of centres and values already written (`centres`, `coordinates`)."""
    parts, run = [], []
    for i, y in enumerate(ys):
        if y is not None:
            run.append(i)
        elif run:
            parts.append(_subpath(spans, xs, ys, run))
            run = []
    if run:
        parts.append(_subpath(spans, xs, ys, run))
    return "".join(parts)


def _subpath(
    spans: Sequence[Span], xs: Sequence[str], ys: Sequence[str | None], run: list[int]
) -> str:
    """A run's subpath; a lone point would draw nothing: it spans its column instead."""
    if len(run) == 1:
        (x0, x1), y = spans[run[0]], ys[run[0]]
        return f"M{x0:.1f},{y}L{x1:.1f},{y}"
    return "M" + "L".join([f"{xs[i]},{ys[i]}" for i in run])


def band_path(spans: Sequence[Span], lows: list[float | None], highs: list[float | None]) -> str:
    """Path data of the min-max band: a closed shape per run where both are known."""
    return band_data(spans, centres(spans), coordinates(lows), coordinates(highs))


def band_data(
    spans: Sequence[Span],
    xs: Sequence[str],
    lows: Sequence[str | None],
    highs: Sequence[str | None],
) -> str:
    """`band_path` of centres and values already written (`centres`, `coordinates`)."""
    parts = []
    for run in _runs(
        [lo is not None and hi is not None for lo, hi in zip(lows, highs, strict=True)]
    ):
        upper = line_data([spans[i] for i in run], [xs[i] for i in run], [highs[i] for i in run])
        # Back along the lows, each span turned round so that a lone column closes as a box.
        back = [(spans[i][1], spans[i][0]) for i in reversed(run)]
        lower = line_data(back, [xs[i] for i in reversed(run)], [lows[i] for i in reversed(run)])
        parts.append(upper + "L" + lower[1:] + "Z")
    return "".join(parts)


def hits(frame: Frame, spans: Sequence[Span], details: Sequence[str]) -> str:
    """An invisible rect per column, its `<title>` the column's hover detail."""
    # What `tag` writes (class, x, y, width, height), spelt out: there is one per column.
    top, height = number(frame.top), f"{frame.bottom - frame.top:.1f}"
    rects = [
        f'<rect class="hit" x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 0.5):.1f}"'
        f' height="{height}"><title>{escape(detail)}</title></rect>'
        for (x0, x1), detail in zip(spans, details, strict=True)
    ]
    # Transparent, not "none": an unpainted fill would not catch the pointer.
    return tag("g", "".join(rects), cls="hits", fill="transparent")
