"""Dashboard pages: overview, endpoint, comparison."""

from django.urls import path

from analytics import views

urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("endpoints/<uuid:endpoint_id>", views.endpoint_page, name="endpoint"),
    path("compare", views.compare_page, name="compare"),
]
