"""The availability chart: uptime bars coloured by level, incidents as bands."""

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from django.utils.safestring import SafeString

from analytics.charts.scales import (
    Frame,
    Key,
    Size,
    Span,
    bucket_slots,
    time_range,
    value_ticks,
)
from analytics.charts.slow import slow_bands, slow_keys
from analytics.charts.svg import (
    PALETTE,
    axes,
    box_attrs,
    chart_svg,
    corner_note,
    legend,
    no_data,
    number,
    plot_frame,
    tag,
    title_tag,
)
from analytics.charts.words import MEMO, TO, count, duration, percent, period, when
from analytics.rows import AvailabilityBucket, IncidentRow, MaintenanceRow
from healthmon.intervals import Interval, Window

# A bucket is "up" at three nines, the usual SLA floor, and "down" under 95% (over an hour
# down in a day). Bars of 99% and 100% look alike: the level's colour tells them apart.
UP_AT = 99.9
DEGRADED_AT = 95.0
LEVEL_FILL = {"up": PALETTE[2], "degraded": PALETTE[1], "down": PALETTE[5], "nodata": "#999"}
INCIDENT_FILL = PALETTE[3]
MAINTENANCE_FILL = "#6b6bd6"

AVAILABILITY_KEYS = (
    Key(f"\u2265 {UP_AT:g}%", "up", LEVEL_FILL["up"], box=True),
    Key(f"{DEGRADED_AT:g}{TO}{UP_AT:g}%", "degraded", LEVEL_FILL["degraded"], box=True),
    Key(f"< {DEGRADED_AT:g}%", "down", LEVEL_FILL["down"], box=True),
    Key("no data", "nodata", LEVEL_FILL["nodata"], box=True),
    Key("incident", "incident", INCIDENT_FILL, box=True),
    Key("maintenance", "maintenance", MAINTENANCE_FILL, box=True),
)


def _level(uptime: float | None) -> str:
    if uptime is None:
        return "nodata"
    return "up" if uptime >= UP_AT else "degraded" if uptime >= DEGRADED_AT else "down"


def _bars(
    frame: Frame, buckets: Sequence[AvailabilityBucket], slots: Sequence[tuple[int, float, float]]
) -> str:
    """A bar per bucket, as tall as its uptime and coloured by its level."""
    # What `tag` writes (class, box, fill, its opacity), spelt out: a chart has hundreds of
    # bars, most of them of a few heights (100%), whose markup around x and width is kept.
    t0, duration, left, size = frame.t0, frame.t1 - frame.t0, frame.left, frame.right - frame.left
    kept: dict[float | None, tuple[str, str, str]] = {}
    bars = []
    for i, s, e in slots:
        bucket = buckets[i]
        uptime, down = bucket.get("uptime"), bucket.get("downtime_s") or 0.0
        a, b = (s - t0) / duration, (e - t0) / duration  # `frame.x` inlined
        x0 = left + (0.0 if a < 0.0 else 1.0 if a > 1.0 else a) * size
        x1 = left + (0.0 if b < 0.0 else 1.0 if b > 1.0 else b) * size
        gap = 1.0 if x1 - x0 > 3 else 0.0  # bars apart only where they are wide enough
        head, middle, tail = kept.get(uptime) or kept.setdefault(uptime, _bar_parts(frame, uptime))
        title = _bar_title(s, e, frame.short, uptime, down)
        bars.append(
            f"{head}{x0 + gap / 2:.1f}{middle}{max(x1 - x0 - gap, 0.5):.1f}{tail}{title}</rect>"
        )
    return "".join(bars)


def _bar_parts(frame: Frame, uptime: float | None) -> tuple[str, str, str]:
    """A bar's markup before its x, between x and width, and after its width."""
    # A bucket down throughout keeps a sliver, so that its colour still shows.
    top = frame.top if uptime is None else min(frame.y(uptime), frame.bottom - 2)
    level = _level(uptime)
    faded = ' fill-opacity="0.25"' if uptime is None else ""
    return (
        f'<rect class="bar {level}" x="',
        f'" y="{number(top)}" width="',
        f'" height="{number(frame.bottom - top)}" fill="{LEVEL_FILL[level]}"{faded}>',
    )


@lru_cache(maxsize=MEMO)
def _bar_title(s: float, e: float, short: bool, uptime: float | None, down: float) -> str:
    """A bar's hover detail; the same at every width, and from render to render."""
    detail = "no data" if uptime is None else f"uptime {percent(uptime)}"
    detail += f", down {duration(down)}" if down else ""
    return title_tag(f"{period(s, e, short)} — {detail}")


def _incident_detail(incident: IncidentRow) -> str:
    """Start, end or 'ongoing', duration and cause of an incident."""
    began, ended = incident["started_at"], incident.get("resolved_at")
    text = f"Incident from {when(began.timestamp())} UTC"
    text += f" to {when(ended.timestamp())} UTC" if ended else ", ongoing"
    seconds = incident.get("duration_seconds")
    if seconds is None and ended:
        seconds = (ended - began).total_seconds()
    text += f" ({duration(seconds)})" if seconds is not None else ""
    return text + (f": {incident['cause']}" if incident.get("cause") else "")


def _incident_interval(incident: IncidentRow, end: datetime) -> Interval:
    """Start and end of an incident; an open one lasts to the chart's end."""
    return incident["started_at"], incident.get("resolved_at") or end


def _incident_band(frame: Frame, incident: IncidentRow, during: Interval) -> str:
    """A translucent band across the plot, clipped to the chart's range."""
    x0, x1 = frame.x(during[0].timestamp()), frame.x(during[1].timestamp())
    if x1 - x0 < 2:  # a short incident stays visible
        x0 = min(x0, frame.right - 2)
        x1 = x0 + 2
    box = box_attrs(x0, frame.top, x1 - x0, frame.bottom - frame.top)
    # Outlined as well as tinted: a tint alone fades into the bars under it.
    paint = {"fill": INCIDENT_FILL, "fill_opacity": "0.3", "stroke": INCIDENT_FILL}
    title = title_tag(_incident_detail(incident))
    return tag("rect", title, cls="incident", data_incident=str(incident["id"]), **box, **paint)


def _maintenance_band(frame: Frame, held: MaintenanceRow) -> str:
    """A hatched-looking band under the incidents: time that counts in no figure."""
    s, e = held["starts_at"].timestamp(), held["ends_at"].timestamp()
    x0, x1 = frame.x(max(s, frame.t0)), frame.x(min(e, frame.t1))
    x1 = max(x1, x0 + 2)
    box = box_attrs(x0, frame.top, x1 - x0, frame.bottom - frame.top)
    paint = {
        "fill": MAINTENANCE_FILL,
        "fill_opacity": "0.2",
        "stroke": MAINTENANCE_FILL,
        "stroke_dasharray": "4 3",
    }
    text = f"Maintenance from {when(s)} UTC to {when(e)} UTC ({duration(e - s)}): not counted"
    return tag("rect", title_tag(text), cls="maintenance", **box, **paint)


def _availability_desc(
    title: str,
    span: Span,
    buckets: Sequence[AvailabilityBucket],
    incidents: Sequence[IncidentRow],
) -> str:
    """Intervals at the target, lowest uptime, downtime and incidents, in words."""
    known = [uptime for b in buckets if (uptime := b.get("uptime")) is not None]
    parts = ["no data in this period"]
    if known:
        parts = [
            f"{len(known)} of {count(len(buckets), 'interval')} with data",
            f"{sum(u >= UP_AT for u in known)} at or above {UP_AT:g}%",
            f"lowest {percent(min(known))}",
            f"downtime {duration(sum(b.get('downtime_s') or 0.0 for b in buckets))}",
        ]
    ongoing = sum(1 for i in incidents if not i.get("resolved_at"))
    parts.append(count(len(incidents), "incident") + (f" ({ongoing} ongoing)" if ongoing else ""))
    head = f"{title}, {when(span[0])} to {when(span[1])} UTC"
    return f"{head}: " + "; ".join(parts) + "."


def availability_chart(
    buckets: Sequence[AvailabilityBucket],
    incidents: Sequence[IncidentRow],
    *,
    maintenance: Sequence[MaintenanceRow] = (),
    start: datetime,
    end: datetime,
    title: str = "Availability",
    width: int = 960,
    height: int = 200,
    id_prefix: str | None = None,
    since: datetime | None = None,
    degraded: Sequence[Interval] = (),
) -> SafeString:
    """Draw uptime per bucket as bars coloured by level, incidents as bands over them,
    maintenance as dashed bands and degraded stretches as amber bands.

    Levels (classes): `up` at or above 99.9%, `degraded` at or above 95%, `down` below,
    `nodata` where nothing was watched.
    """
    return availability_charts(
        buckets,
        incidents,
        [Size(width, height)],
        maintenance=maintenance,
        start=start,
        end=end,
        title=title,
        id_prefix=id_prefix,
        since=since,
        degraded=degraded,
    )[0]


def availability_charts(
    buckets: Sequence[AvailabilityBucket],
    incidents: Sequence[IncidentRow],
    sizes: Sequence[Size],
    *,
    maintenance: Sequence[MaintenanceRow] = (),
    start: datetime,
    end: datetime,
    title: str = "Availability",
    id_prefix: str | None = None,
    since: datetime | None = None,
    degraded: Sequence[Interval] = (),
) -> list[SafeString]:
    """`availability_chart` at each size (a page's wide and phone drawings; every size
    draws every bucket), what is drawn chosen and described once for all of them."""
    if id_prefix is not None and len(sizes) > 1:
        raise ValueError("one id_prefix cannot name several charts")
    span, window = time_range(start, end), Window(start, end)
    keys = slow_keys(AVAILABILITY_KEYS, degraded)
    ordered = sorted(buckets, key=lambda bucket: bucket["t"])
    slots = bucket_slots([bucket["t"] for bucket in ordered], *span)
    inside = [ordered[i] for i, _, _ in slots]
    during = [(i, _incident_interval(i, end)) for i in incidents]
    shown = [(i, interval) for i, interval in during if window.overlaps(interval)]
    held = [m for m in maintenance if window.overlaps((m["starts_at"], m["ends_at"]))]
    empty = all(bucket.get("uptime") is None for bucket in inside)
    desc = _availability_desc(title, span, inside, [incident for incident, _ in shown])
    charts = []
    for size in sizes:
        frame = plot_frame(size.width, size.height, span, keys, 100.0)
        bars = _bars(frame, ordered, slots)
        bands = "".join(_incident_band(frame, incident, interval) for incident, interval in shown)
        body = [
            axes(frame, value_ticks(100.0), lambda value: f"{value:g}%"),
            tag("g", bars, cls="bars"),
            slow_bands(frame, degraded),
            tag("g", "".join(_maintenance_band(frame, m) for m in held), cls="maintenance"),
            tag("g", bands, cls="incidents"),
            legend(frame, keys),
        ]
        if empty:
            body.append(no_data(frame))
        note = corner_note(since, frame.short)
        charts.append(chart_svg("chart-availability", frame, id_prefix, title, desc, body, note))
    return charts
