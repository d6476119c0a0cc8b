"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, path

from statuspages.views import manage

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    # subscriptions (statuspages.views.subscribe)
    # badges (statuspages.views.badges)
    # management
    path("status-pages", manage.status_pages, name="status-pages"),
    path("status-pages/new", manage.status_page_new, name="status-page-create"),
    path("status-pages/<uuid:page_id>/edit", manage.status_page_edit, name="status-page-edit"),
    path(
        "status-pages/<uuid:page_id>/delete", manage.status_page_delete, name="status-page-delete"
    ),
]
