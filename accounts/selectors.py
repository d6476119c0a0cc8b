"""Organization-scoped reads for the accounts API."""

from accounts.models import Invitation, InvitationQuerySet, Organization, User, UserQuerySet


def user_list(*, organization: Organization) -> UserQuerySet:
    """Users of an organization with their project grants."""
    return (
        User.objects.for_org(organization)
        .select_related("organization")
        .prefetch_related("projects")
        .order_by("date_joined", "email")
    )


def invitation_list_pending(*, organization: Organization) -> InvitationQuerySet:
    """Invitations of an organization that can still be accepted, newest first."""
    return (
        Invitation.objects.for_org(organization)
        .pending()
        .prefetch_related("projects")
        .order_by("-created_at")
    )
