"""The analytics reports the API serves, composed from `selectors` with a bounded number of
queries whatever the number of endpoints on the page.

Every report takes items (endpoints, or projects with their endpoints) the caller may
see; it never widens them. `reads` holds the items and the page's shared reads; `tables`
the reports of one row per item (summary, uptime, SLA); `series` those over time
(response time, availability, errors, comparison).
"""

from analytics.reports.reads import REPORT_FIELDS, Item, Items, Reads
from analytics.reports.series import (
    MAX_COMPARED,
    TOP_ERRORS,
    availability,
    compare,
    errors,
    response_time,
)
from analytics.reports.tables import sla, summary, uptime

__all__ = [
    "MAX_COMPARED",
    "REPORT_FIELDS",
    "TOP_ERRORS",
    "Item",
    "Items",
    "Reads",
    "availability",
    "compare",
    "errors",
    "response_time",
    "sla",
    "summary",
    "uptime",
]
