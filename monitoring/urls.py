"""Endpoint management and incident pages."""

from django.urls import path

from monitoring import ack_views, incident_views, views

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
    path("incidents", incident_views.incident_list, name="incidents"),
    path("incidents/new", incident_views.incident_declare, name="incident-declare"),
    path("incidents/<uuid:incident_id>", incident_views.incident_detail, name="incident"),
    path(
        "incidents/<uuid:incident_id>/updates",
        incident_views.incident_post_update,
        name="incident-update",
    ),
    path(
        "incidents/<uuid:incident_id>/notes",
        incident_views.incident_add_note,
        name="incident-note",
    ),
    path("incidents/<uuid:incident_id>/edit", incident_views.incident_edit, name="incident-edit"),
    path(
        "incidents/<uuid:incident_id>/acknowledge",
        incident_views.incident_acknowledge_view,
        name="incident-acknowledge",
    ),
    path("ack/<str:token>", ack_views.ack, name="ack"),
]
