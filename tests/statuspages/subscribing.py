"""Builders for the subscriber tests: a page showing endpoints, incidents and their updates,
written directly (the services that make them belong to other modules)."""

from django.core.mail import EmailMessage
from django.utils import timezone

from accounts.models import Organization
from monitoring.models import Endpoint, Incident, IncidentKind, IncidentUpdate
from statuspages.models import Component, Section, StatusPage, Subscriber, Visibility


def make_page(
    organization: Organization,
    slug: str,
    *endpoints: Endpoint,
    visibility: str = Visibility.PUBLIC,
) -> StatusPage:
    """A page of `organization` showing `endpoints` in one section."""
    page = StatusPage.objects.create(
        organization=organization, name=f"{slug.title()} status", slug=slug, visibility=visibility
    )
    section = Section.objects.create(page=page, name="Services")
    for position, endpoint in enumerate(endpoints):
        Component.objects.create(page=page, section=section, endpoint=endpoint, position=position)
    return page


def confirmed(page: StatusPage, email: str) -> Subscriber:
    """A subscriber who confirmed already."""
    return Subscriber.objects.create(page=page, email=email, confirmed_at=timezone.now())


def automatic_incident(endpoint: Endpoint, public: bool = True) -> Incident:
    """An open measured incident of `endpoint`."""
    return Incident.objects.create(
        endpoint=endpoint, kind=IncidentKind.AUTOMATIC, started_at=timezone.now(), public=public
    )


def declared_incident(
    organization: Organization, *endpoints: Endpoint, title: str = "Login is slow"
) -> Incident:
    """An open manual incident naming `endpoints`."""
    incident = Incident.objects.create(
        organization=organization,
        kind=IncidentKind.MANUAL,
        title=title,
        impact="partial_outage",
        started_at=timezone.now(),
    )
    incident.endpoints.set(endpoints)
    return incident


def post_update(
    incident: Incident,
    message: str = "We are looking into it.",
    *,
    state: str = "investigating",
    notify: bool = True,
) -> IncidentUpdate:
    """An update on `incident`, with the HTML a writer would have rendered from it."""
    return IncidentUpdate.objects.create(
        incident=incident,
        state=state,
        message=message,
        message_html=f"<p>{message}</p>",
        notify_subscribers=notify,
    )


def readable(mail: EmailMessage) -> str:
    """Everything a reader of `mail` can see: its headers and every part, decoded.

    Left out are the two values the mail library draws at random (the Message-ID and the MIME
    boundary): their digits are noise, and a secret such as a port number turns up in them by
    chance (it did, twice).
    """
    message = mail.message()
    headers = [
        f"{name}: {message.get_content_type() if name == 'Content-Type' else value}"
        for name, value in message.items()
        if name != "Message-ID"
    ]
    parts = [
        part.get_payload(decode=True).decode(part.get_content_charset() or "utf-8")
        for part in message.walk()
        if not part.is_multipart()
    ]
    return "\n".join(headers + parts)
