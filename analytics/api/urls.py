"""Routes of the analytics API under /api/v1/analytics."""

from rest_framework.routers import SimpleRouter

from analytics.api import views

router = SimpleRouter(trailing_slash=False)
router.register("analytics", views.AnalyticsViewSet, basename="analytics")

urlpatterns = router.urls
