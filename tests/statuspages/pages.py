"""Building status pages for the public-page tests: a page of the cast's organization
with one section per name and the given endpoints as components, in order."""

from collections.abc import Sequence
from typing import Any

from monitoring.models import Endpoint, Incident, IncidentUpdate
from statuspages.models import Component, Section, StatusPage


def make_page(
    organization: Any,
    sections: dict[str, Sequence[Endpoint]],
    *,
    slug: str = "acme",
    **fields: Any,
) -> StatusPage:
    """A page with sections of components, in the order given."""
    fields.setdefault("name", "Acme")
    page = StatusPage.objects.create(organization=organization, slug=slug, **fields)
    for position, (name, endpoints) in enumerate(sections.items()):
        section = Section.objects.create(page=page, name=name, position=position)
        for index, endpoint in enumerate(endpoints):
            Component.objects.create(page=page, section=section, endpoint=endpoint, position=index)
    return page


def declare(
    organization: Any, endpoints: Sequence[Endpoint], *, updates: Sequence[str] = (), **fields: Any
) -> Incident:
    """A manual (declared) incident on some endpoints, with updates in order."""
    fields.setdefault("title", "Slow logins")
    fields.setdefault("impact", "partial_outage")
    fields.setdefault("started_at", fields.pop("at"))
    incident = Incident.objects.create(organization=organization, kind="manual", **fields)
    incident.endpoints.set(endpoints)
    for number, message in enumerate(updates):
        IncidentUpdate.objects.create(
            incident=incident,
            state="investigating",
            message=message,
            message_html=f"<p>{message}</p>",
            created_at=incident.started_at.replace(second=number),
        )
    return incident
