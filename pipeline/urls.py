"""The ping routes of heartbeat endpoints (outside /api/v1, no login)."""

from django.urls import path

from pipeline import views

urlpatterns = [
    path("ping/<str:key>", views.ping, name="ping"),
    # `<uuid>/<action>` or `<project ping_key>/<slug>`, told apart by the first part.
    path("ping/<str:key>/<str:part>", views.ping_two_parts, name="ping-action"),
    path("ping/<str:project_key>/<str:slug>/<str:action>", views.ping_slug, name="ping-slug"),
]
