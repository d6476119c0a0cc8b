"""Alert writes: channels and maintenance windows (`channels`), and the outbox of
notifications that incidents, degraded endpoints and expiring certificates raise (`events`).
Import from the package."""

from alerts.services.announcements import announcements_queue
from alerts.services.channels import (
    channel_create,
    channel_delete,
    channel_update,
    deliveries_scrub,
    maintenance_window_delete,
    maintenance_window_save,
    mask_channel_config,
)
from alerts.services.escalation import (
    escalation_key,
    escalation_policy_create,
    escalation_policy_delete,
    escalation_policy_update,
    escalations_run,
    escalations_start,
)
from alerts.services.events import (
    certificate_event_key,
    certificate_notifications_queue,
    degradations_queue,
    event_key,
    notifications_queue,
)

__all__ = [
    "announcements_queue",
    "certificate_event_key",
    "certificate_notifications_queue",
    "channel_create",
    "channel_delete",
    "channel_update",
    "degradations_queue",
    "deliveries_scrub",
    "escalation_key",
    "escalation_policy_create",
    "escalation_policy_delete",
    "escalation_policy_update",
    "escalations_run",
    "escalations_start",
    "event_key",
    "maintenance_window_delete",
    "maintenance_window_save",
    "mask_channel_config",
    "notifications_queue",
]
