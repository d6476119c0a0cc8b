"""URL configuration: the dashboards, the API under /api/v1 with its schema and docs, and
the Django admin."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularSwaggerSplitView,
)

from healthmon import health
from healthmon.api.views import HealthView
from healthmon.favicon import favicon

api_v1: list[URLPattern | URLResolver] = [
    path("", include("accounts.api.urls")),
    path("", include("apikeys.api.urls")),
    path("", include("monitoring.api.urls")),
    path("", include("alerts.api.urls")),
    path("", include("analytics.api.urls")),
    path("", include("statuspages.api.urls")),
    path("health", HealthView.as_view(), name="health"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
]

urlpatterns = [
    # Operations (API-CONTRACT.md): no auth, outside /api/v1.
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics_view, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
    # Heartbeat pings (API-CONTRACT.md): no auth, outside /api/v1.
    path("", include("pipeline.urls")),
    path("api/v1/", include(api_v1)),
    # The split view serves its script from a URL: the page then needs no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("", include("accounts.urls")),
    path("", include("apikeys.urls")),
    path("", include("monitoring.urls")),
    path("", include("alerts.urls")),
    path("", include("analytics.urls")),
    path("", include("statuspages.urls")),
]

handler400 = "healthmon.errors.bad_request"
handler404 = "healthmon.errors.page_not_found"
handler500 = "healthmon.errors.server_error"
