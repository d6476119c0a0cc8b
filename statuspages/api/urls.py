"""`/api/v1/status-pages`."""

from rest_framework.routers import SimpleRouter

from statuspages.api import views

router = SimpleRouter(trailing_slash=False)
router.register("status-pages", views.StatusPageViewSet, basename="status-page")

urlpatterns = router.urls
