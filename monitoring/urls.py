"""Endpoint management pages."""

from django.urls import path

from monitoring import views

urlpatterns = [
    path("endpoints/new", views.endpoint_create, name="endpoint-create"),
    path("endpoints/schedule-preview", views.schedule_preview, name="schedule-preview"),
    path("endpoints/<uuid:endpoint_id>/edit", views.endpoint_edit, name="endpoint-edit"),
    path("endpoints/<uuid:endpoint_id>/pause", views.endpoint_pause, name="endpoint-pause"),
    path("endpoints/<uuid:endpoint_id>/resume", views.endpoint_resume, name="endpoint-resume"),
    path(
        "endpoints/<uuid:endpoint_id>/check-now",
        views.endpoint_check_now,
        name="endpoint-check-now",
    ),
    path("endpoints/<uuid:endpoint_id>/delete", views.endpoint_delete, name="endpoint-delete"),
]
