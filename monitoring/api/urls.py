"""Routes of the monitoring API under /api/v1."""

from rest_framework.routers import SimpleRouter

from monitoring.api import views

router = SimpleRouter(trailing_slash=False)
router.register("endpoints", views.EndpointViewSet, basename="endpoint")
router.register("incidents", views.IncidentViewSet, basename="incident")
router.register("locations", views.LocationViewSet, basename="location")

urlpatterns = router.urls
