"""Routes of the alerts API under /api/v1."""

from rest_framework.routers import SimpleRouter

from alerts.api import escalation_views, views

router = SimpleRouter(trailing_slash=False)
router.register(
    "notification-channels", views.NotificationChannelViewSet, basename="notification-channel"
)
router.register(
    "maintenance-windows", views.MaintenanceWindowViewSet, basename="maintenance-window"
)
router.register(
    "escalation-policies", escalation_views.EscalationPolicyViewSet, basename="escalation-policy"
)

urlpatterns = router.urls
