"""CSV export of analytics pages (`?format=csv`)."""

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from rest_framework import renderers

# Cells a spreadsheet would run as a formula (CWE-1236) are quoted as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One CSV row per item of each result's list (series points, SLA tiers), with the
    result's own fields repeated in front."""
    flat = []
    for result in results:
        scalars = {k: v for k, v in result.items() if not isinstance(v, list | dict)}
        nested = [v for v in result.values() if isinstance(v, list)]
        for item in nested[0] if nested else [{}]:
            flat.append({**scalars, **item})
    return flat


class CSVRenderer(renderers.BaseRenderer):
    """A page's results as CSV, one row per point or tier."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        """CSV with a header row (the view's `csv_columns`), even for an empty page;
        datetimes in ISO 8601."""
        flat = rows(data.get("results", []) if isinstance(data, dict) else [])
        view = (renderer_context or {}).get("view")
        columns = getattr(view, "csv_columns", None) or (list(flat[0]) if flat else [])
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in flat:
            writer.writerow({k: _iso(_cell(v)) for k, v in row.items()})
        return out.getvalue().encode()


def _iso(value: Any) -> Any:
    return value.isoformat().replace("+00:00", "Z") if hasattr(value, "isoformat") else value
