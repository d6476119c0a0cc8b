"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    # subscriptions (statuspages.views.subscribe)
    # badges (statuspages.views.badges)
    # management pages (statuspages.views.manage)
]
