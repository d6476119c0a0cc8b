"""Stand-ins for statuspages.views.public (written beside the gates): views that use the
gates as the real ones will, and a URLconf that adds them to the app's routes."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from healthmon.urls import urlpatterns as app_urlpatterns
from statuspages.gates import data_view, page_path, page_view, public_page


@page_view
def page(request: HttpRequest, slug: str) -> HttpResponse:
    status_page = public_page(request, slug)
    link = page_path(request, status_page, "summary.json")
    return HttpResponse(f"<h1>{status_page.name}</h1><a href='{link}'>json</a>")


@data_view
def summary(request: HttpRequest, slug: str) -> HttpResponse:
    return JsonResponse({"page": {"name": public_page(request, slug).name}})


@data_view
def atom(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(public_page(request, slug).name, content_type="application/atom+xml")


@data_view
def rss(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(public_page(request, slug).name, content_type="application/rss+xml")


urlpatterns = [
    path("status/<str:slug>", page),
    path("status/<str:slug>/summary.json", summary),
    *app_urlpatterns,
]
handler400 = "healthmon.errors.bad_request"
handler404 = "healthmon.errors.page_not_found"
handler500 = "healthmon.errors.server_error"
