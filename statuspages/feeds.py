"""A status page's incident history as Atom and RSS (feedgen), and as summary.json in
Atlassian Statuspage's shape, so that feed readers and existing tooling read ours."""

import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.utils.html import escape
from feedgen.feed import FeedGenerator

from statuspages.models import StatusPage
from statuspages.selectors import IncidentRow, MaintenanceRow, PageView

# Feed entries: the newest updates, enough for a reader that polls now and then.
FEED_ENTRIES = 50


def page_url(page: StatusPage, suffix: str = "") -> str:
    """The absolute address of the page (or one of its routes): on its custom domain when
    it has one. Never taken from the request, so that a cached body is the same whichever
    host asked, nor reversed, since a custom domain's request routes by another URLconf."""
    if page.custom_domain:
        return f"https://{page.custom_domain}/{suffix}"
    return f"{settings.WEB_BASE_URL}/status/{page.slug}" + (f"/{suffix}" if suffix else "")


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def _incident(incident: IncidentRow) -> dict[str, Any]:
    return {
        "id": str(incident.id),
        "name": incident.title,
        "status": incident.state,
        "impact": incident.impact,
        "created_at": _iso(incident.started_at),
        "updated_at": _iso(incident.updated_at),
        "resolved_at": _iso(incident.resolved_at),
        "components": [str(pk) for pk in incident.component_ids],
        "incident_updates": [
            {
                "id": update.id,
                "status": update.state,
                "body": update.text,
                "body_html": update.html,
                "created_at": _iso(update.created_at),
            }
            for update in incident.updates
        ],
    }


def _maintenance(window: MaintenanceRow) -> dict[str, Any]:
    return {
        "id": str(window.id),
        "name": window.name,
        "status": "in_progress" if window.active else "scheduled",
        "scheduled_for": _iso(window.starts_at),
        "scheduled_until": _iso(window.ends_at),
        "components": [str(pk) for pk in window.component_ids],
    }


def summary_json(view: PageView) -> bytes:
    """summary.json: the page, its overall status, components, unresolved public
    incidents with their updates, and active and upcoming maintenance."""
    document = {
        "page": {
            "name": view.page.title or view.page.name,
            "url": page_url(view.page),
            "updated_at": _iso(view.updated_at),
        },
        "status": {
            "indicator": view.overall.indicator,
            "description": view.overall.description,
        },
        "components": [
            {
                "id": str(row.id),
                "name": row.name,
                "section": row.section,
                "status": row.status,
                "uptime_percent": row.uptime_percent,
            }
            for row in view.components
        ],
        "incidents": [_incident(incident) for incident in view.active_incidents],
        "scheduled_maintenances": [_maintenance(window) for window in view.maintenances],
    }
    return json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False).encode()


def _feed(view: PageView, fmt: str) -> FeedGenerator:
    """The feed of a page's incident updates, newest first."""
    page, url = view.page, page_url(view.page)
    feed = FeedGenerator()
    feed.id(url)
    feed.title(f"{page.title or page.name} status history")
    feed.link(href=page_url(page, f"history.{fmt}"), rel="self")
    feed.link(href=url, rel="alternate")  # last: RSS's <link> is the last one set
    about = page.description or f"Incidents and updates of {page.name}"
    # RSS readers render a channel's description as HTML, Atom's subtitle is text: the
    # page's description is text, so RSS gets it escaped.
    feed.description(escape(about) if fmt == "rss" else about)
    feed.language("en")
    feed.updated(view.updated_at)
    incidents = view.incidents
    entries = sorted(
        ((update, incident) for incident in incidents for update in incident.updates),
        key=lambda pair: (pair[0].created_at, pair[0].id),
        reverse=True,
    )[:FEED_ENTRIES]
    for update, incident in entries:
        entry = feed.add_entry(order="append")
        entry.id(f"{url}#update-{update.id}")
        entry.guid(f"{url}#update-{update.id}", permalink=False)
        entry.title(f"{incident.title}: {update.state_label}")
        entry.link(href=f"{url}#incident-{incident.id}")
        # Sanitised at write time; an automatic incident's opening line is text, escaped
        # here, since readers render both RSS descriptions and Atom html content as HTML.
        # feedgen's description() replaces the content: set it first.
        html = update.html or escape(update.text)
        entry.description(html)
        entry.content(html, type="html")
        entry.published(update.created_at)
        entry.updated(update.created_at)
    return feed


def atom_feed(view: PageView) -> bytes:
    """The page's incident history as Atom."""
    return bytes(_feed(view, "atom").atom_str(pretty=True))


def rss_feed(view: PageView) -> bytes:
    """The page's incident history as RSS 2.0."""
    return bytes(_feed(view, "rss").rss_str(pretty=True))
