"""Heartbeat slugs: the optional name in `/ping/<project ping_key>/<slug>`, its form, its
uniqueness in the project, and the lookup the slug ping route makes."""

import re
from typing import Any
from uuid import UUID

from healthmon.errors import FieldErrors
from monitoring.models import Endpoint, EndpointType

MAX_SLUG_LENGTH = 100
SLUG_PATTERN = re.compile(r"[a-z0-9_-]+")
SLUG_BAD = (
    f"Use 1 to {MAX_SLUG_LENGTH} lowercase letters, digits, hyphens and underscores ([a-z0-9_-])."
)
SLUG_TAKEN = "Another endpoint of this project has this slug."
SLUG_NOT_HEARTBEAT = "Only heartbeats have a slug (their ping URL's last part)."


def slug_errors(
    slug: Any, *, heartbeat: bool, project_id: UUID | None, endpoint_id: UUID | None
) -> FieldErrors:
    """What a slug refuses: a wrong form, a probed endpoint, or one another endpoint of the
    project (`project_id`, None when unknown) already has; None (no slug) always passes."""
    if slug is None:
        return {}
    if not heartbeat:
        return {"slug": [SLUG_NOT_HEARTBEAT]}
    if not isinstance(slug, str) or not (
        len(slug) <= MAX_SLUG_LENGTH and SLUG_PATTERN.fullmatch(slug)
    ):
        return {"slug": [SLUG_BAD]}
    if project_id is not None and slug_taken(slug, project_id=project_id, endpoint_id=endpoint_id):
        return {"slug": [SLUG_TAKEN]}
    return {}


def slug_taken(slug: str, *, project_id: UUID, endpoint_id: UUID | None) -> bool:
    """Whether an endpoint of the project other than `endpoint_id` has the slug."""
    taken = Endpoint.objects.filter(project_id=project_id, slug=slug)
    if endpoint_id is not None:
        taken = taken.exclude(pk=endpoint_id)
    return taken.exists()


def heartbeat_key_for_slug(*, project_key: str, slug: str) -> UUID | None:
    """The ping key of the heartbeat with this slug in the project with this ping key; None
    when either is unknown."""
    return (
        Endpoint.objects.filter(
            project__ping_key=project_key, slug=slug, type=EndpointType.HEARTBEAT
        )
        .values_list("ping_key", flat=True)
        .first()
    )
