"""The ping routes of heartbeat endpoints (outside /api/v1, no login)."""

from django.urls import path

from pipeline import views

urlpatterns = [
    path("ping/<str:key>", views.ping, name="ping"),
    path("ping/<str:key>/<str:action>", views.ping, name="ping-action"),
]
