"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, path

from statuspages.views import domains, unlock

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    # a password page's form (statuspages.views.unlock)
    path("status/<str:slug>/unlock", unlock.unlock, name="statuspage-unlock"),
    # Caddy's on-demand TLS asks here before getting a custom domain's certificate
    path("status-domains/check", domains.domain_check, name="statuspage-domain-check"),
    # subscriptions (statuspages.views.subscribe)
    # badges (statuspages.views.badges)
    # management pages (statuspages.views.manage)
]
