"""The demo organization of `make demo`: an owner with a known login and endpoints that probe
the small local services `healthmon.devtargets` serves, so the charts fill within minutes.

Seeding again finds the same organization by its owner's email and the endpoints by name:
nothing is duplicated, and the login works as printed.
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.models import DEFAULT_PROJECT_NAME, Organization, Project, Role, User
from accounts.services import organization_create, project_create
from monitoring.models import Endpoint, EndpointType
from monitoring.services import EndpointChanges, endpoint_create, endpoint_update
from monitoring.validation import endpoint_validate

EMAIL = "demo@example.com"
PASSWORD = "healthmon-demo"  # noqa: S105 - a printed demo login, on a development server
ORGANIZATION = "Demo"


@dataclass(frozen=True)
class DemoEndpoint:
    """One demo endpoint: its name, the target path it probes, how often."""

    name: str
    path: str
    interval_seconds: int
    timeout_seconds: int = 5


# One per path of `healthmon.devtargets.TARGETS`.
ENDPOINTS = (
    DemoEndpoint("Catalog API", "/catalog", 10),
    DemoEndpoint("Checkout", "/checkout", 10),
    DemoEndpoint("Search", "/search", 15),
    DemoEndpoint("Payments (down 2 min in 10)", "/payments", 15),
)


class DemoConflict(Exception):
    """The demo login's email belongs to a user outside the demo organization."""


@dataclass(frozen=True)
class DemoSeed:
    """What seeding found or made."""

    organization: Organization
    user: User
    created: int
    kept: int


@transaction.atomic
def demo_seed(*, targets: str) -> DemoSeed:
    """Create the demo organization, owner and endpoints, or bring back the ones made before.

    `targets` is the origin of the demo services (http://127.0.0.1:8001). An endpoint made
    before keeps its history; only a changed target (another DEMO_PORT) restarts it.
    """
    user = User.objects.select_related("organization").filter(email=EMAIL).first()
    if user is None:
        organization, project = organization_create(name=ORGANIZATION)
        user = User.objects.create_user(
            EMAIL,
            PASSWORD,
            organization=organization,
            role=Role.OWNER,
            email_verified_at=timezone.now(),
        )
    elif user.organization.name != ORGANIZATION:
        raise DemoConflict(
            f"{EMAIL} belongs to the organization {user.organization.name!r}, not to the demo: "
            "its password and endpoints are left alone."
        )
    else:
        organization = user.organization
        project = Project.objects.filter(organization=organization).order_by(
            "created_at"
        ).first() or project_create(organization=organization, name=DEFAULT_PROJECT_NAME)
        if not user.check_password(PASSWORD) or not user.is_active:
            user.set_password(PASSWORD)
            user.is_active = True
            user.save(update_fields=["password", "is_active"])
    created = sum(_endpoint_seed(project, spec, targets.rstrip("/")) for spec in ENDPOINTS)
    return DemoSeed(
        organization=organization, user=user, created=created, kept=len(ENDPOINTS) - created
    )


def _endpoint_seed(project: Project, spec: DemoEndpoint, origin: str) -> bool:
    """Create the endpoint, or point the existing one at the targets; True if created."""
    target = f"{origin}{spec.path}"
    existing = (
        Endpoint.objects.select_for_update()
        .filter(project__organization_id=project.organization_id, name=spec.name)
        .first()
    )
    if existing is not None:
        if existing.target != target or not existing.enabled:
            endpoint_update(endpoint=existing, changes=EndpointChanges(target=target, enabled=True))
        return False
    values = endpoint_validate(
        {
            "type": EndpointType.HTTP,
            "target": target,
            "config": {},
            "interval_seconds": spec.interval_seconds,
            "timeout_seconds": spec.timeout_seconds,
        },
        current=None,
    )
    endpoint_create(project=project, name=spec.name, **values)
    return True
