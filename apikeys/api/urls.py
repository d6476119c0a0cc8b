"""Routes of the API key API under /api/v1, and the users routes whose removal revokes keys."""

from rest_framework.routers import SimpleRouter

from apikeys.api import views

router = SimpleRouter(trailing_slash=False)
router.register("users", views.UserViewSet, basename="user")
router.register("api-keys", views.ApiKeyViewSet, basename="apikey")

urlpatterns = router.urls
