"""Routes of a custom domain (`statuspages.middleware.CustomDomainMiddleware`): the one
page's public routes at the root, nothing else of the app (no admin, API or sign-in)."""

from django.urls import URLPattern, URLResolver, path

from healthmon.favicon import favicon
from statuspages.views.domains import on_domain

# The public and subscribe views take the page slug (`view(request, slug, ...)`); the
# domain passes its page's. Names to align with statuspages.views.public/.subscribe.
PUBLIC = "statuspages.views.public"
SUBSCRIBE = "statuspages.views.subscribe"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", on_domain(PUBLIC, "page"), name="domain-page"),
    path("summary.json", on_domain(PUBLIC, "summary"), name="domain-summary"),
    path("history.atom", on_domain(PUBLIC, "atom"), name="domain-atom"),
    path("history.rss", on_domain(PUBLIC, "rss"), name="domain-rss"),
    path("subscribe", on_domain(SUBSCRIBE, "subscribe"), name="domain-subscribe"),
    path("confirm/<str:token>", on_domain(SUBSCRIBE, "confirm"), name="domain-confirm"),
    path("unsubscribe/<str:token>", on_domain(SUBSCRIBE, "unsubscribe"), name="domain-unsubscribe"),
    path("unlock", on_domain("statuspages.views.unlock", "unlock"), name="domain-unlock"),
    path("favicon.ico", favicon, name="domain-favicon"),
]

handler400 = "healthmon.errors.bad_request"
handler404 = "statuspages.views.domains.not_found"
handler500 = "healthmon.errors.server_error"
