"""Routes of the accounts API under /api/v1."""

from rest_framework.routers import SimpleRouter

from accounts.api import views

router = SimpleRouter(trailing_slash=False)
router.register("auth", views.AuthViewSet, basename="auth")
# `users` is routed by apikeys.api.urls: removing a user revokes its API keys too.
router.register("invitations", views.InvitationViewSet, basename="invitation")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("audit-log", views.AuditLogViewSet, basename="audit-log")

urlpatterns = router.urls
