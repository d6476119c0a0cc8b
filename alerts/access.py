"""Fetching notification channels and maintenance windows for a caller; a foreign id is a 404."""

from accounts.access import get_or_404
from accounts.models import User
from alerts.models import MaintenanceWindow, NotificationChannel


def access_channel(caller: User, channel_id: object) -> NotificationChannel:
    """A notification channel the caller can see (members: those touching their projects)."""
    return get_or_404(NotificationChannel.objects.visible_to(caller), channel_id)


def access_maintenance_window(caller: User, window_id: object) -> MaintenanceWindow:
    """A maintenance window the caller can see (members: those touching their projects)."""
    return get_or_404(MaintenanceWindow.objects.visible_to(caller), window_id)
