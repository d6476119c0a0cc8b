"""Who may read a public status page, and which page a request names (by slug, or by the
custom domain it was sent to)."""

from django.http import Http404, HttpRequest

from statuspages.models import StatusPage, Visibility


def public_page(request: HttpRequest, slug: str) -> StatusPage:
    """The page a public route names, if this reader may see it; else 404, the same answer
    for an unknown slug and a page the reader may not see."""
    page = StatusPage.objects.filter(slug=slug).first()
    if page is None or page.visibility != Visibility.PUBLIC:
        raise Http404("no such status page")
    return page
