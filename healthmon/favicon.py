"""`/favicon.ico`: the site's icon for clients that ask for it by that name."""

from functools import cache

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

ICON = "healthmon/favicon.svg"


@cache
def _icon() -> bytes:
    found = finders.find(ICON)
    if not isinstance(found, str):  # shipped with the code: its absence is a broken install
        raise RuntimeError(f"static file {ICON} is missing")
    with open(found, "rb") as icon:
        return icon.read()


@require_GET
@cache_control(public=True, max_age=86_400)
def favicon(request: HttpRequest) -> HttpResponse:
    """The SVG icon the pages link to (`<link rel=icon>`), under the name browsers guess."""
    return HttpResponse(_icon(), content_type="image/svg+xml")
