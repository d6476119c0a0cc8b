"""Acknowledging an incident: someone looked, so escalation and reminders stop.

By the API, from the incident page, or by the one-click link every notification of an open
incident carries (`/ack/<token>`). The link's token is the incident id signed with the
site's key under a purpose of its own (`django.core.signing`): nothing is stored for it, it
names one incident only, it cannot be forged or moved to another incident, and it works
once, because acknowledging is a one-time move of the incident (a second use finds it
acknowledged) that a resolved incident refuses (it expires when the incident resolves).
"""

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from monitoring.errors import IncidentResolved
from monitoring.models import AckVia, ActivityKind, Incident, IncidentActivity

# The signing purpose: a token made for anything else under the same key is no ack token.
ACK_SALT = "healthmon.monitoring.incident-ack"


def ack_token(incident_id: object) -> str:
    """The ack link's token of an incident: its id (hex) and a signature of it."""
    return signing.Signer(salt=ACK_SALT).sign(uuid.UUID(str(incident_id)).hex)


def ack_token_incident_id(token: str) -> uuid.UUID | None:
    """The incident id a token was made for; None when it is tampered, unknown or malformed."""
    try:
        return uuid.UUID(hex=signing.Signer(salt=ACK_SALT).unsign(token))
    except (signing.BadSignature, ValueError):
        return None


def ack_link(incident_id: object) -> str:
    """The absolute URL of an incident's one-click acknowledge link."""
    return settings.WEB_BASE_URL + reverse("ack", kwargs={"token": ack_token(incident_id)})


@dataclass(frozen=True)
class Acknowledgement:
    """What an acknowledge call did: the incident as it stands, and whether this call was
    the one that acknowledged it (False: someone did before, nothing changed)."""

    incident: Incident
    acknowledged_now: bool


def _activity_text(by: User | None, via: str) -> str:
    """The timeline's words for an acknowledgement (an email only for the team's eyes)."""
    if via == AckVia.LINK or by is None:
        return "Acknowledged from the link in a notification"
    where = "on the incident page" if via == AckVia.PAGE else "by API"
    return f"Acknowledged by {by.email} {where}"


@transaction.atomic
def incident_acknowledge(*, incident: Incident, by: User | None, via: str) -> Acknowledgement:
    """Acknowledge an open incident once: a conditional UPDATE (not acknowledged, not
    resolved) decides, so of two racing calls one wins and writes the timeline line (an
    outbox row `alerts` announces as `incident.acknowledged`); the other changes nothing.

    Raises `IncidentResolved` for a resolved incident that nobody acknowledged; one that
    was acknowledged before it resolved answers with that acknowledgement.
    """
    now = timezone.now()
    won = Incident.objects.filter(
        pk=incident.pk, acknowledged_at__isnull=True, resolved_at__isnull=True
    ).update(acknowledged_at=now, acknowledged_by=by, acknowledged_via=via)
    if won:
        IncidentActivity.objects.create(
            incident_id=incident.pk,
            kind=ActivityKind.ACKNOWLEDGED,
            at=now,
            actor=by,
            text=_activity_text(by, via),
            detail={"via": via},
        )
    incident.refresh_from_db(
        fields=["acknowledged_at", "acknowledged_by", "acknowledged_via", "resolved_at"]
    )
    if incident.acknowledged_at is None:
        raise IncidentResolved()
    return Acknowledgement(incident=incident, acknowledged_now=bool(won))
