"""Status page routes: the public pages, feeds, subscriptions and badges (no login), and
the management pages (owner/admin)."""

from django.urls import URLPattern, URLResolver, path

from statuspages.views import subscribe

urlpatterns: list[URLPattern | URLResolver] = [
    # public pages, summary.json and feeds (statuspages.views.public)
    # subscriptions (statuspages.views.subscribe)
    path("status/<slug:slug>/subscribe", subscribe.subscribe, name="status-subscribe"),
    path("status/<slug:slug>/confirm/<str:token>", subscribe.confirm, name="status-confirm"),
    path(
        "status/<slug:slug>/unsubscribe/<str:token>",
        subscribe.unsubscribe,
        name="status-unsubscribe",
    ),
    # badges (statuspages.views.badges)
    # management pages (statuspages.views.manage)
]
