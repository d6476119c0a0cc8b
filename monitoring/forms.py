"""The endpoint form's assertion editor: rows of plain fields (source, property, comparison,
target) that work without JavaScript, a few empty ones to add more.

The rows are the form's word on `config.assertions`: what they hold replaces the key in the
options posted (or, with the options box left blank, in the endpoint's current ones), and
the whole config is then checked by the API's serializer as any other. Empty rows are
dropped and the rest numbered in order, so `config.assertions[2]` in an error is the third
filled row, which is the third row shown again.
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import QueryDict

from monitoring.api.serializers import LOCATIONS_SHOWN
from monitoring.locations import DEFAULT_QUORUM, default_slug
from monitoring.models import Endpoint, EndpointType, Location
from monitoring.validation.assertions import COMPARISONS, MAX_ASSERTIONS, SOURCES, SUPPORTED

ASSERTION_TYPES = frozenset({"http", "graphql", "elasticsearch"})
SHOWN_MARK = "assertions-shown"  # posted by a form that showed the rows
EMPTY_ROWS = 3
_PARTS = ("source", "property", "comparison", "target")
_ERROR = re.compile(r"assertions\[(\d+)\]\.(\w+): (.*)", re.S)


def posted_rows(post: QueryDict) -> list[dict[str, str]]:
    """The filled rows, in order (`assertion-<n>-<part>` fields)."""
    numbers = sorted(
        {int(m[1]) for key in post if (m := re.fullmatch(r"assertion-(\d+)-source", key))}
    )
    rows = [{part: post.get(f"assertion-{n}-{part}", "") for part in _PARTS} for n in numbers]
    return [row for row in rows if any(value.strip() for value in row.values())]


def merge_rows(
    post: QueryDict, config_text: str, endpoint: Endpoint | None, endpoint_type: str
) -> str | None:
    """The config text to check, the rows put in it as `assertions`; None to leave the
    posted text alone (no rows shown, a kind without assertions, or text that is not a
    JSON object, which the serializer then names)."""
    if SHOWN_MARK not in post or endpoint_type not in ASSERTION_TYPES:
        return None
    rows = posted_rows(post)
    text = config_text.strip()
    if text:
        try:
            base = json.loads(text)
        except ValueError:
            return None
    elif endpoint is not None and endpoint.type == endpoint_type:
        base = dict(endpoint.config_masked)
    else:
        base = {}
    if not isinstance(base, dict):
        return None
    if not text and not rows and not base.get("assertions"):
        return None  # nothing changes: the options are left as they are
    base["assertions"] = [_typed(row) for row in rows]
    return json.dumps(base)


def _typed(row: Mapping[str, str]) -> dict[str, Any]:
    """A row as the API takes it: blank parts left out, so that they read as absent."""
    return {part: value for part, value in row.items() if value != ""}


def shown_rows(rows: Sequence[Mapping[str, Any]], errors: Sequence[str]) -> list[dict[str, Any]]:
    """The rows to draw: the given ones (each with its errors by part), then empty ones."""
    by_row: dict[int, dict[str, list[str]]] = {}
    for message in errors:
        if match := _ERROR.fullmatch(message):
            by_row.setdefault(int(match[1]), {}).setdefault(match[2], []).append(match[3])
    drawn = [
        {**{part: _text(row.get(part, "")) for part in _PARTS}, "errors": by_row.get(i, {})}
        for i, row in enumerate(rows)
    ]
    blank = {**dict.fromkeys(_PARTS, ""), "errors": {}}
    room = max(0, min(EMPTY_ROWS, MAX_ASSERTIONS - len(drawn)))
    return [*drawn, *(dict(blank) for _ in range(room))]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def stored_rows(endpoint: Endpoint | None) -> list[dict[str, Any]]:
    """The endpoint's saved assertions (masked config), as rows."""
    if endpoint is None:
        return []
    return list(endpoint.config_masked.get("assertions") or [])


def without_assertions(config: Mapping[str, Any]) -> dict[str, Any]:
    """The options box's content: the rows show the assertions."""
    return {key: value for key, value in config.items() if key != "assertions"}


# The choices the rows offer, with which comparisons each source takes (shown as help).
SOURCE_CHOICES = SOURCES
COMPARISON_CHOICES = COMPARISONS
SUPPORTED_HELP = [(source, ", ".join(SUPPORTED[source])) for source in SOURCES]


# --- Locations and quorum ------------------------------------------------------------------
# The boxes of the defined locations post `locations` (one value per ticked box) with the
# mark `locations-shown`, so that none ticked reads as "no locations" (the default one); the
# quorum box is the form's word on `config.quorum`, put into the options as the rows are.

QUORUM_FIELD = "quorum"


def location_choices() -> list[tuple[str, str]]:
    """(slug, label) of each location an endpoint may list: the default one first."""
    default = default_slug()
    defined = Location.objects.exclude(slug=default).values_list("slug", "name")
    return [
        (default, f"{default} (default)"),
        *((slug, f"{name} ({slug})") for slug, name in defined),
    ]


def chosen_locations(post: QueryDict | None, endpoint: Endpoint | None) -> list[str]:
    """The ticked boxes: as posted, or as saved."""
    if post is not None and LOCATIONS_SHOWN in post:
        return post.getlist("locations")
    return list(endpoint.locations or []) if endpoint else []


def shown_quorum(post: QueryDict | None, endpoint: Endpoint | None) -> str:
    """The quorum box: as posted, or as saved (the default when none is)."""
    if post is not None and QUORUM_FIELD in post:
        return str(post.get(QUORUM_FIELD, ""))
    saved = endpoint.config_masked.get("quorum") if endpoint else None
    return str(saved if saved is not None else DEFAULT_QUORUM)


def merge_quorum(
    post: QueryDict, config_text: str, endpoint: Endpoint | None, endpoint_type: str
) -> str | None:
    """The config text to check with the quorum box put in it; None to leave it alone (no
    box, a heartbeat, the quorum unchanged, or text that is not a JSON object)."""
    typed = post.get(QUORUM_FIELD, "").strip()
    if not typed or endpoint_type == EndpointType.HEARTBEAT:
        return None
    text = config_text.strip()
    try:
        base = json.loads(text) if text else _saved_config(endpoint, endpoint_type)
    except ValueError:
        return None
    if not isinstance(base, dict):
        return None
    if str(base.get(QUORUM_FIELD, DEFAULT_QUORUM)) == typed:
        return None  # the options already say so
    base[QUORUM_FIELD] = typed  # "2" is read as the number by the option
    return json.dumps(base)


def _saved_config(endpoint: Endpoint | None, endpoint_type: str) -> dict[str, Any]:
    """The options the blank box keeps: the endpoint's (masked) ones of the same type."""
    if endpoint is not None and endpoint.type == endpoint_type:
        return dict(endpoint.config_masked)
    return {}
