"""Incident news shows on status pages at once: a page's cached responses
(`statuspages.cache`) and its status badge are dropped when an incident it shows is declared,
changed (title, impact, visibility, state, resolution) or gets an update.

`monitoring` sits below this app and may not call it, so its writes are heard through
Django's model signals, connected in `StatuspagesConfig.ready`. The pipeline's own writes
(checks opening and resolving automatic incidents, endpoint states) use bulk queries that send
no signal: they show through the caches' freshness, within 10 s.

The caches are dropped once the write commits (a render before then would keep the old
state), for every page with a component on an endpoint the incident names then, or named
before an edit of its endpoints. A failing cache never fails the write.
"""

import logging
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_save

from monitoring.models import Incident, IncidentUpdate
from statuspages.cache import page_cache_bump
from statuspages.models import Component, StatusPage
from statuspages.views.badges import badge_cache_key

logger = logging.getLogger(__name__)

# The fields of an incident readers see on a page; a save of none of them (acknowledging
# it, say) changes nothing there.
_SHOWN = frozenset({"title", "impact", "public", "state", "resolved_at", "started_at"})


def pages_showing(endpoint_ids: Iterable[UUID]) -> list[StatusPage]:
    """The pages with a component on any of these endpoints (id and badge key only)."""
    return list(
        StatusPage.objects.filter(
            pk__in=Component.objects.filter(endpoint_id__in=list(endpoint_ids)).values("page_id")
        ).only("id", "badge_key")
    )


def _incident_endpoints(incident_id: UUID) -> set[UUID]:
    """The endpoints an incident names: its measured one and the ones declared."""
    named = Incident.endpoints.through.objects.filter(incident_id=incident_id)
    ids = set(named.values_list("endpoint_id", flat=True))
    measured = Incident.objects.filter(pk=incident_id).values_list("endpoint_id", flat=True)
    return ids | {endpoint for endpoint in measured if endpoint is not None}


def forget_pages_of(incident_id: UUID, also: Iterable[UUID] = ()) -> None:
    """Drop the cached responses and status badges of the pages showing the incident (and
    of those showing the endpoints `also`)."""
    try:
        pages = pages_showing(_incident_endpoints(incident_id) | set(also))
        for page in pages:
            page_cache_bump(page.pk)
        cache.delete_many([badge_cache_key("status", "", page.badge_key) for page in pages])
    except Exception:  # the write stands; readers see it within the caches' few seconds
        logger.warning("status page caches not cleared after an incident", exc_info=True)


def _on_commit(incident_id: UUID, also: Iterable[UUID] = ()) -> None:
    also = tuple(also)
    transaction.on_commit(lambda: forget_pages_of(incident_id, also), robust=True)


def incident_saved(
    sender: Any, instance: Incident, created: bool, update_fields: Any = None, **kwargs: Any
) -> None:
    """An incident declared, or a field readers see changed (acknowledging one does not)."""
    if created or update_fields is None or _SHOWN & set(update_fields):
        _on_commit(instance.pk)


def update_saved(sender: Any, instance: IncidentUpdate, created: bool, **kwargs: Any) -> None:
    """An update posted (or corrected)."""
    _on_commit(instance.incident_id)


def endpoints_changed(
    sender: Any, instance: Any, action: str, pk_set: set[Any] | None, **kwargs: Any
) -> None:
    """A declared incident's endpoints changed: the pages of the old ones change too."""
    if action in ("post_add", "post_remove") and isinstance(instance, Incident):
        _on_commit(instance.pk, pk_set or ())


def connect() -> None:
    """Listen to monitoring's incident writes (once per process)."""
    post_save.connect(incident_saved, sender=Incident, dispatch_uid="statuspages.incident")
    post_save.connect(update_saved, sender=IncidentUpdate, dispatch_uid="statuspages.update")
    m2m_changed.connect(
        endpoints_changed, sender=Incident.endpoints.through, dispatch_uid="statuspages.m2m"
    )
