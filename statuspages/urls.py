"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, re_path

from statuspages.views import badges

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    # subscriptions (statuspages.views.subscribe)
    # badges (statuspages.views.badges)
    re_path(
        r"^badge/(?P<badge_key>[^/]+)/(?P<kind>status|uptime|response-time)\.(?P<fmt>svg|json)$",
        badges.badge,
        name="badge",
    ),
    # management pages (statuspages.views.manage)
]
