"""Views of the custom-domain URLconf: the page's public views called with the domain's page
slug, the domain's 404, and the check a TLS proxy asks before getting a certificate."""

from collections.abc import Callable
from importlib import import_module
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound
from django.http.request import split_domain_port
from django.views.decorators.http import require_GET

from statuspages.gates import domain_slug
from statuspages.middleware import domain_page_slug

NOT_FOUND_HTML = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<title>Not found</title></head><body><h1>Not found</h1>"
    '<p>There is nothing here. <a href="/">Back to the status page</a></p></body></html>\n'
)


def on_domain(module: str, name: str) -> Callable[..., HttpResponse]:
    """The view `module.name`, called with the slug of the page the domain serves.

    Looked up when called: the public and subscribe views are written beside this module,
    and a domain route whose view is missing must not stop the rest from loading.
    """

    def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        slug = domain_slug(request)
        if slug is None:  # only the custom-domain middleware routes here
            raise Http404("not a custom domain")
        target: Callable[..., HttpResponse] = getattr(import_module(module), name)
        return target(request, slug=slug, **kwargs)

    view.__name__ = view.__qualname__ = f"domain_{name}"
    view.__doc__ = f"{module}.{name} for the page of this custom domain."
    return view


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 on a custom domain: a bare page that links nothing of the app."""
    return HttpResponseNotFound(NOT_FOUND_HTML)


@require_GET
def domain_check(request: HttpRequest) -> HttpResponse:
    """200 when `?domain=` is a registered custom domain, else 404: Caddy's on-demand TLS
    `ask` endpoint, so that certificates are only requested for registered domains."""
    domain, _port = split_domain_port(str(request.GET.get("domain", "")).strip())
    if domain and domain_page_slug(domain):
        return HttpResponse("ok\n", content_type="text/plain")
    return HttpResponseNotFound("unknown domain\n", content_type="text/plain")
