"""A component's day bars as one SVG, drawn on the server.

Written as a string rather than a template loop: 50 components of 90 days are 4,500 bars,
which Django's template engine draws in tens of milliseconds, this in a few. The SVG
stretches to its box (`preserveAspectRatio="none"`), so on a narrow screen the bars
shrink instead of scrolling; every bar's `<title>` is its hover text.
"""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from statuspages.models import MAX_UPTIME_DAYS
from statuspages.selectors import ComponentRow, DayBar

BAR = 4  # viewBox units per day: a 3-unit bar and a 1-unit gap
HEIGHT = 30
_TONES = {"ok": "o", "none": "n", "minor": "m", "major": "x"}
_WORDS = {"ok": "No incident", "none": "", "minor": "Some downtime", "major": "Downtime"}


def _hover(bar: DayBar, day: str) -> str:
    uptime = "No data" if bar.uptime is None else f"{bar.uptime:g}% uptime"
    if not bar.incidents:  # no reader-given text: nothing to escape
        return (
            f"{day}\n{uptime}\n{_WORDS[bar.tone]}" if bar.uptime is not None else f"{day}\n{uptime}"
        )
    lines = [day, uptime, *(f"Incident: {title}" for title in bar.incidents)]
    return escape("\n".join(lines))


def _openings(count: int) -> list[str]:
    """Each bar's markup up to its tone letter, the same on every page of `count` days."""
    return [
        f'<rect x="{i * BAR}" width="{BAR - 1}" height="{HEIGHT}" class="' for i in range(count)
    ]


_OPENINGS = _openings(MAX_UPTIME_DAYS)


def day_bars_svg(row: ComponentRow, days: list[str]) -> SafeString:
    """Draw one bar per day, coloured by tone, oldest left, with a text alternative that
    names the period's uptime (colour is never the only carrier). `days` are the bars'
    dates in words, formatted once for every component."""
    bars = row.bars
    width = BAR * len(bars)
    uptime = "no data" if row.uptime_percent is None else f"{row.uptime_percent:g}% uptime"
    label = escape(f"{row.name}: {uptime} over the last {len(bars)} days")
    openings = _OPENINGS if len(bars) <= len(_OPENINGS) else _openings(len(bars))
    # Short markup: these rects are most of the page's bytes (the SVG's defaults give y=0;
    # the tone is one letter, page.css reads it).
    rects = "".join(
        [
            f'{openings[i]}{_TONES[bar.tone]}"><title>{_hover(bar, days[i])}</title></rect>'
            for i, bar in enumerate(bars)
        ]
    )
    return mark_safe(  # noqa: S308 - every text inside is escaped above
        f'<svg class="days" viewBox="0 0 {width} {HEIGHT}" preserveAspectRatio="none"'
        f' role="img" aria-label="{label}">{rects}</svg>'
    )
