"""Response-time and availability charts, drawn on the server as inline SVG.

Pure functions of what `analytics.reports` returns; each gives one `<svg>` for a page. They
write no script, no event handler and no `style` attribute, which the site's
Content-Security-Policy would refuse: colours come from classes styled by
`healthmon/static/healthmon/charts.css`, with presentation attributes as a fallback so a chart
stays legible without it. Every string from a user or a probed service (labels, incident ids
and causes) is escaped. Hover details are SVG `<title>` elements.

The public API is what this module exports. Its modules are internal: `words` (numbers, times,
labels), `scales` (columns, frame, ticks), `svg` (elements and chart parts), then one module per
chart. Names without a leading underscore there are shared within the package, not public.
"""

from analytics.charts.availability import availability_chart, availability_charts
from analytics.charts.comparison import MAX_SERIES, comparison_chart, comparison_charts
from analytics.charts.response import response_time_chart, response_time_charts
from analytics.charts.scales import Size
from analytics.charts.sparklines import sparkline

__all__ = [
    "MAX_SERIES",
    "Size",
    "availability_chart",
    "availability_charts",
    "comparison_chart",
    "comparison_charts",
    "response_time_chart",
    "response_time_charts",
    "sparkline",
]
