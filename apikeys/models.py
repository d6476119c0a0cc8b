"""API keys: scoped credentials for programs, acting with their creator's current role."""

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Organization, User


class Scope(models.TextChoices):
    """What a key may do; `admin` grants everything its creator's role allows."""

    ENDPOINT_READ = "endpoint:read", "View endpoints and health checks"
    ENDPOINT_CREATE = "endpoint:create", "Create, change and delete endpoints"
    INCIDENT_READ = "incident:read", "View incidents"
    ANALYTICS_READ = "analytics:read", "Access analytics data"
    ADMIN = "admin", "Full access"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    """Reusable key filters."""

    def for_org(self, organization: Organization) -> "ApiKeyQuerySet":
        """Keys of one organization."""
        return self.filter(organization=organization)

    def visible_to(self, user: User) -> "ApiKeyQuerySet":
        """Owners and admins manage every key of their organization; members their own."""
        keys = self.for_org(user.organization)
        return keys if user.is_manager else keys.filter(created_by=user)

    def not_revoked(self) -> "ApiKeyQuerySet":
        """Keys that were never revoked (expired ones included)."""
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """A key's public record; the secret itself is never stored, only its SHA-256 digest."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_keys"
    )
    # Kept when the creator is removed, for the record; such a key no longer authenticates.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="api_keys"
    )
    name = models.CharField(max_length=200)
    scopes = models.JSONField(default=list)
    lookup_id = models.CharField(max_length=16, unique=True, editable=False)
    prefix = models.CharField(max_length=48, editable=False, help_text="The key's public start.")
    digest = models.CharField(max_length=64, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now: datetime) -> bool:
        """Neither revoked nor expired."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def allows(self, scope: str | None) -> bool:
        """Whether the key holds `scope`; None means the route is for `admin` keys only."""
        return Scope.ADMIN in self.scopes or (scope is not None and scope in self.scopes)

    @property
    def audit_via(self) -> str:
        """How the audit log shows a request made with this key (`accounts.audit`)."""
        return f"api_key:{self.prefix}"

    @property
    def state(self) -> str:
        """`active`, `expired` or `revoked`."""
        if self.revoked_at is not None:
            return "revoked"
        return "active" if self.is_usable(timezone.now()) else "expired"
