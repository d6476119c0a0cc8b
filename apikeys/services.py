"""API key lifecycle: issue, revoke, and record use; removing a member with its keys."""

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, User
from accounts.services import user_remove
from apikeys import keys
from apikeys.models import ApiKey, Scope

LAST_USED_RESOLUTION = timedelta(minutes=1)


@transaction.atomic
def api_key_create(
    *, creator: User, name: str, scopes: Iterable[str], expires_at: datetime | None
) -> tuple[ApiKey, str]:
    """Issue a key for the creator's organization; returns the record and the clear key.

    The clear key exists only in this return value: it is shown once and never stored.
    """
    key, parsed = keys.generate(settings.API_KEY_PREFIX)
    api_key = ApiKey.objects.create(
        organization=creator.organization,
        created_by=creator,
        name=name,
        scopes=sorted(set(scopes), key=list(Scope.values).index),
        lookup_id=parsed.lookup_id,
        prefix=parsed.display_prefix,
        digest=parsed.digest,
        expires_at=expires_at,
    )
    audit_record(
        action=AuditAction.API_KEY_CREATED,
        organization_id=creator.organization_id,
        actor=creator,
        target=api_key,
        details={"name": name, "scopes": api_key.scopes},
    )
    return api_key, key


@transaction.atomic
def api_keys_revoke(*, api_keys: QuerySet[ApiKey]) -> int:
    """Revoke keys: each answers 401 from its next request on; revoked ones stay as they are."""
    # Locked by id: the caller's queryset may join nullable relations (the admin's does).
    revoking = list(
        ApiKey.objects.select_for_update()
        .filter(pk__in=api_keys.values("pk"), revoked_at__isnull=True)
        .order_by("pk")
    )
    for api_key in revoking:
        audit_record(
            action=AuditAction.API_KEY_REVOKED,
            organization_id=api_key.organization_id,
            target=api_key,
            details={"name": api_key.name},
        )
    return ApiKey.objects.filter(pk__in=[api_key.pk for api_key in revoking]).update(
        revoked_at=timezone.now()
    )


@transaction.atomic
def member_remove(*, actor: User, user: User) -> None:
    """Remove a user from the organization and revoke every key it created.

    Removal is accounts' (`user_remove`: the role rules, the audit event, the delete), the
    keys are this app's, so the workflow joining both lives here, above accounts. The keys
    are revoked first, while the user still owns them; a refused removal rolls both back.
    """
    api_keys_revoke(api_keys=ApiKey.objects.filter(created_by=user))
    user_remove(actor=actor, user=user)


def api_key_mark_used(*, api_key: ApiKey, now: datetime) -> None:
    """Record use at most once a minute per key, so busy keys cost no write per request."""
    stale = now - LAST_USED_RESOLUTION
    if api_key.last_used_at is not None and api_key.last_used_at > stale:
        return
    # Conditional, so that concurrent requests on many workers still write once.
    ApiKey.objects.filter(pk=api_key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale)
    ).update(last_used_at=now)
    api_key.last_used_at = now
