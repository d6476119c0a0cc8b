"""Template filters for the dashboards: response times, percentages, durations, links."""

from datetime import datetime
from typing import Any

from django import template
from django.http import QueryDict
from django.utils import timezone

register = template.Library()
DASH = "—"


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
def duration(seconds: float | None) -> str:
    """Seconds as `43 s`, `12 min 5 s`, `3 h 4 min`, `2 d 5 h`; a dash when there are none."""
    if seconds is None:
        return DASH
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


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
