"""Status pages: what a team shows its own users, who subscribed, and what they were sent."""

import secrets
import uuid

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.models import Organization
from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint, IncidentUpdate, new_badge_key

DEFAULT_UPTIME_DAYS = 90
MIN_UPTIME_DAYS = 30
MAX_UPTIME_DAYS = 365


def new_subscriber_token() -> str:
    """The secret in a subscriber's confirm and unsubscribe links."""
    return secrets.token_urlsafe(24)


class Visibility(models.TextChoices):
    """Who may read a page."""

    PUBLIC = "public", "Public"
    PASSWORD = "password", "Password"
    PRIVATE = "private", "Private (members only)"


class StatusPageQuerySet(models.QuerySet["StatusPage"]):
    """Reusable status page filters."""

    def for_org(self, organization: Organization) -> "StatusPageQuerySet":
        """Pages of one organization."""
        return self.filter(organization=organization)


class StatusPage(models.Model):
    """A public page showing some endpoints ("components") in sections, their uptime and
    the incidents the team chose to tell about."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="status_pages"
    )
    name = models.CharField(max_length=200)
    slug = models.CharField(max_length=63, unique=True)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(max_length=2_000, blank=True)
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC
    )
    # bcrypt (Django's BCryptSHA256 hasher) of the page password; "" when none.
    password_hash = models.CharField(max_length=200, blank=True, editable=False)
    # Lowercase host name; null when none (the unique constraint leaves nulls out).
    custom_domain = models.CharField(max_length=253, null=True, blank=True, unique=True)
    uptime_days = models.PositiveSmallIntegerField(default=DEFAULT_UPTIME_DAYS)
    show_response_times = models.BooleanField(default=False)
    badge_key = models.CharField(max_length=32, unique=True, default=new_badge_key, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = StatusPageQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["organization", "created_at"], name="statuspage_org_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(uptime_days__gte=MIN_UPTIME_DAYS, uptime_days__lte=MAX_UPTIME_DAYS),
                name="statuspage_uptime_days_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Section(models.Model):
    """A named group of components on a page, in the page's order."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    page = models.ForeignKey(StatusPage, on_delete=models.CASCADE, related_name="sections")
    name = models.CharField(max_length=200)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["page", "position", "id"]

    def __str__(self) -> str:
        return self.name


class Component(models.Model):
    """An endpoint shown in a section, in the section's order; once per page."""

    id = models.BigAutoField(primary_key=True)
    page = models.ForeignKey(StatusPage, on_delete=models.CASCADE, related_name="components")
    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="components")
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, related_name="status_components"
    )
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["section", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["page", "endpoint"], name="component_once_per_page"),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id} on {self.page_id}"


class Subscriber(models.Model):
    """An email address that asked for a page's incident updates; mailed only once it
    confirmed (double opt-in)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    page = models.ForeignKey(StatusPage, on_delete=models.CASCADE, related_name="subscribers")
    email = models.EmailField(max_length=254)
    token = models.CharField(
        max_length=64, unique=True, default=new_subscriber_token, editable=False
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint("page", Lower("email"), name="subscriber_once_per_page"),
        ]

    def __str__(self) -> str:
        return f"subscriber of {self.page_id}"


class MaintenanceNotice(models.Model):
    """The claim that a maintenance window was announced to subscribers: one row per
    window, written once by the fan-out that announces it (its insert is the claim)."""

    id = models.BigAutoField(primary_key=True)
    window = models.OneToOneField(MaintenanceWindow, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return f"notice of {self.window_id}"


class SubscriberMail(models.Model):
    """One incident update, or one maintenance notice, mailed to one subscriber: exactly
    one of `update` and `maintenance` is set, and each unique pair makes it once."""

    id = models.BigAutoField(primary_key=True)
    subscriber = models.ForeignKey(Subscriber, on_delete=models.CASCADE, related_name="mails")
    update = models.ForeignKey(
        IncidentUpdate, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    maintenance = models.ForeignKey(
        MaintenanceWindow, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    # When a send task for it was last queued: a mail still unsent long after is queued
    # again (a batch lost before the broker, or given up after its retries).
    queued_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subscriber", "update"], name="subscriber_mail_once"),
            models.UniqueConstraint(
                fields=["subscriber", "maintenance"], name="subscriber_notice_once"
            ),
            models.CheckConstraint(
                condition=Q(update__isnull=False, maintenance__isnull=True)
                | Q(update__isnull=True, maintenance__isnull=False),
                name="subscriber_mail_one_subject",
            ),
        ]
        indexes = [
            models.Index(
                fields=["created_at"],
                name="subscriber_mail_unsent_idx",
                condition=Q(sent_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.update_id or self.maintenance_id} to {self.subscriber_id}"
