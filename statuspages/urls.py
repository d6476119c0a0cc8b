"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, path, re_path

from statuspages.views import badges, domains, manage, public, subscribe, unlock

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    path("status/<str:slug>", public.page, name="status-page"),
    path("status/<str:slug>/summary.json", public.summary, name="status-summary"),
    path("status/<str:slug>/history.atom", public.atom, name="status-atom"),
    path("status/<str:slug>/history.rss", public.rss, name="status-rss"),
    # a password page's form (statuspages.views.unlock)
    path("status/<str:slug>/unlock", unlock.unlock, name="statuspage-unlock"),
    # Caddy's on-demand TLS asks here before getting a custom domain's certificate
    path("status-domains/check", domains.domain_check, name="statuspage-domain-check"),
    # subscriptions (statuspages.views.subscribe)
    path("status/<slug:slug>/subscribe", subscribe.subscribe, name="status-subscribe"),
    path("status/<slug:slug>/confirm/<str:token>", subscribe.confirm, name="status-confirm"),
    path(
        "status/<slug:slug>/unsubscribe/<str:token>",
        subscribe.unsubscribe,
        name="status-unsubscribe",
    ),
    # badges (statuspages.views.badges)
    re_path(
        r"^badge/(?P<badge_key>[^/]+)/(?P<kind>status|uptime|response-time)\.(?P<fmt>svg|json)$",
        badges.badge,
        name="badge",
    ),
    # management
    path("status-pages", manage.status_pages, name="status-pages"),
    path("status-pages/new", manage.status_page_new, name="status-pages-new"),
    path("status-pages/<uuid:page_id>/edit", manage.status_page_edit, name="status-pages-edit"),
    path(
        "status-pages/<uuid:page_id>/delete",
        manage.status_page_delete,
        name="status-pages-delete",
    ),
]
