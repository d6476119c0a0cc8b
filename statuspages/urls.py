"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, path

from statuspages.views import public

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    path("status/<str:slug>", public.status_page, name="status-page"),
    path("status/<str:slug>/summary.json", public.status_summary, name="status-summary"),
    path("status/<str:slug>/history.atom", public.status_atom, name="status-atom"),
    path("status/<str:slug>/history.rss", public.status_rss, name="status-rss"),
    # subscriptions (statuspages.views.subscribe)
    # badges (statuspages.views.badges)
    # management pages (statuspages.views.manage)
]
