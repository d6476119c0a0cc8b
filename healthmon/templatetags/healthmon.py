"""Template filters for the dashboards: response times, percentages, durations, links."""

from datetime import datetime
from typing import Any

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()
DASH = "—"
NO_DATA = format_html('<span class="muted no-data">{}</span>', "No data yet")


@register.filter
def ms(value: float | None) -> str:
    """A response time: `0.8 ms`, `120 ms`, `1.52 s`; a dash when there is none."""
    if value is None:
        return DASH
    if value < 10:
        return f"{value:.1f} ms"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.2f} s"


@register.filter
def pct(value: float | None, places: int = 2) -> str:
    """A percentage with the given decimals (2 by default); a dash when there is none."""
    if value is None:
        return DASH
    return f"{value:.{int(places)}f} %"


@register.filter
def uptime(value: float | None, places: int = 2) -> str:
    """An uptime like `pct`; "No data yet" when there is none (no check, nothing watched):
    a missing figure must not read as a perfect one."""
    if value is None:
        return NO_DATA
    return pct(value, places)


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds with the precision their size deserves, in at most two units: `0.04 s`,
    `0.9 s`, `52.6 s`, `4 min 19 s`, `8 h 46 min`, `2 d 5 h` (a zero second unit is left
    out: `40 min`); a dash when there are none."""
    if seconds is None:
        return DASH
    if seconds < 0:
        return "-" + duration(-seconds)
    if round(seconds, 1) < 60:
        return f"{_short_seconds(seconds)} s"
    units = (("d", 86_400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1))
    for unit, size, smaller, step in units:
        # Rounded to the smaller unit first: 59 min 59.6 s is 1 h, not 59 min 60 s.
        steps = round(seconds / step)
        if steps * step >= size:
            whole, rest = divmod(steps, size // step)
            return f"{whole} {unit}" + (f" {rest} {smaller}" if rest else "")
    raise AssertionError("unreachable: 60 s and more is at least a minute")  # pragma: no cover


def _short_seconds(seconds: float) -> str:
    """Under a minute: tenths from a second on, two significant digits below (a budget of
    a few milliseconds is not 0), `0` only for nothing at all."""
    if seconds == 0:
        return "0"
    if seconds < 0.001:
        return "< 0.001"
    if seconds < 1:
        return f"{seconds:.2g}" if seconds < 0.95 else "1"
    return f"{round(seconds, 1):g}"


@register.filter
def ago(moment: datetime | None) -> str:
    """How long ago a moment was, in its largest unit: `12 s ago`, `3 min ago`, `5 h ago`,
    `2 d ago` (Django's `timesince` costs ~80 µs a call, a tenth of an overview page)."""
    if moment is None:
        return DASH
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


@register.filter
def signed(value: float | None) -> str:
    """A change in percentage points with its sign; a dash when there is none."""
    if value is None:
        return DASH
    return f"{value:+.2f} pt"


@register.simple_tag(takes_context=True)
def with_query(context: dict[str, Any], **changes: Any) -> str:
    """The current query string with some parameters changed (and `page` dropped)."""
    query: QueryDict = context["request"].GET.copy()
    query.pop("page", None)
    for name, value in changes.items():
        query[name] = value
    return f"?{query.urlencode()}"
