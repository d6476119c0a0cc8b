"""Who may read a public status page, and which page a request names (by slug, or by the
custom domain it was sent to).

Usage in a public view (statuspages.views.public, .subscribe):

    @page_view                      # HTML: a locked password page redirects to its unlock form
    def page(request, slug):
        status_page = public_page(request, slug)
        ...

    @data_view                      # summary.json, feeds: a locked password page answers 403
    def summary(request, slug):
        status_page = public_page(request, slug)
        ...

`public_page` answers the page, or raises Http404 (unknown slug, and a private page to a
non-member: the same 404), or `PasswordRequired` (a password page this browser session has
not unlocked; the decorators turn it into the answers above). Members of the page's
organization (signed in to the dashboard) read private and password pages as they are.
Links on a page are built with `page_path(request, page, "summary.json")`, which is
`/status/<slug>/summary.json` on the app's host and `/summary.json` on the page's custom
domain (`statuspages.middleware.CustomDomainMiddleware` sets `request.status_domain_slug`).

Views that are cached must call `public_page` before serving the cache: the gate is per
reader, the cached body is not.
"""

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlencode

from django.contrib.auth.hashers import check_password
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.crypto import constant_time_compare, salted_hmac

from monitoring.models import visible_project_ids
from statuspages.cache import page_by_slug
from statuspages.models import Component, StatusPage, Visibility

# request.session key: {page id: fingerprint of the password hash the unlock was made with}.
UNLOCKED_SESSION_KEY = "statuspages.unlocked"
# The fingerprint changes whenever the password does (a new salt even for the same words),
# so a password change locks every browser that unlocked the page before.
_FINGERPRINT_SALT = "statuspages.gates.unlock"
NOT_FOUND_DETAIL = "no such status page"

View = TypeVar("View", bound=Callable[..., HttpResponse])


class PasswordRequired(Exception):
    """A password page this browser session has not unlocked."""

    def __init__(self, page: StatusPage) -> None:
        self.page = page
        super().__init__("this status page needs its password")


def public_page(request: HttpRequest, slug: str) -> StatusPage:
    """The page a public route names, if this reader may see it; else 404, the same answer
    for an unknown slug and a page the reader may not see. A password page not unlocked in
    this browser session raises PasswordRequired."""
    page = gated_page(request, slug)
    if page.visibility == Visibility.PASSWORD and not may_read(request, page):
        raise PasswordRequired(page)
    return page


def gated_page(request: HttpRequest, slug: str) -> StatusPage:
    """The page behind `slug` unless it is unknown or private to this reader (the same
    Http404 for both); a password page is returned locked or not (the unlock form's view)."""
    page = page_by_slug(slug)
    if page is not None and page.visibility == Visibility.PUBLIC:
        return page  # no session read: a public page's answer does not vary by cookie
    # Read the signed-in user for an unknown slug too, so that the session is touched (and
    # `Vary: Cookie` set) alike for it and for a private page.
    member = _is_member(request, page)
    if page is None or (page.visibility == Visibility.PRIVATE and not member):
        raise Http404(NOT_FOUND_DETAIL)
    return page


def may_read(request: HttpRequest, page: StatusPage) -> bool:
    """Whether this reader sees the page now: public, a member, or unlocked in this session."""
    if page.visibility == Visibility.PUBLIC or _is_member(request, page):
        return True
    if page.visibility != Visibility.PASSWORD:
        return False
    unlocked = request.session.get(UNLOCKED_SESSION_KEY) or {}
    held = unlocked.get(str(page.pk)) if isinstance(unlocked, dict) else None
    return isinstance(held, str) and constant_time_compare(held, _fingerprint(page))


def page_unlock(request: HttpRequest, page: StatusPage, password: str) -> bool:
    """Check a password page's password (bcrypt); right, unlock the page for this browser
    session and answer True."""
    if not page.password_hash or not check_password(password, page.password_hash):
        return False
    if not request.user.is_authenticated:
        request.session.set_expiry(0)  # an anonymous reader's session ends with the browser
    unlocked = request.session.get(UNLOCKED_SESSION_KEY)
    unlocked = dict(unlocked) if isinstance(unlocked, dict) else {}
    unlocked[str(page.pk)] = _fingerprint(page)
    request.session.cycle_key()  # a session id planted before the unlock learns nothing
    request.session[UNLOCKED_SESSION_KEY] = unlocked
    return True


def _fingerprint(page: StatusPage) -> str:
    return salted_hmac(_FINGERPRINT_SALT, page.password_hash).hexdigest()[:32]


def _is_member(request: HttpRequest, page: StatusPage | None) -> bool:
    """A signed-in (session) user of the page's organization who may see every endpoint it
    shows: owners and admins all, a member only the projects granted (a page showing
    another project's endpoints is, to that member, a page that does not exist)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if page is None or getattr(user, "organization_id", None) != page.organization_id:
        return False
    if user.is_manager:
        return True
    shown = Component.objects.filter(page=page).values_list("endpoint__project_id", flat=True)
    return set(shown) <= set(visible_project_ids(user))


def domain_slug(request: HttpRequest) -> str | None:
    """The slug of the page whose custom domain the request was sent to, else None."""
    return getattr(request, "status_domain_slug", None)


def page_path(request: HttpRequest, page: StatusPage, suffix: str = "") -> str:
    """The path of one of the page's public routes as this request reaches it: at the root
    on the page's custom domain, under /status/<slug> elsewhere."""
    if domain_slug(request) == page.slug:
        return "/" + suffix
    return f"/status/{page.slug}" + (f"/{suffix}" if suffix else "")


def unlock_redirect(
    request: HttpRequest, page: StatusPage, back_to: str | None = None
) -> HttpResponse:
    """302 to the page's unlock form, coming back to `back_to` (default: this request's
    path) afterwards."""
    query = urlencode({"next": back_to or request.get_full_path()})
    return HttpResponseRedirect(f"{page_path(request, page, 'unlock')}?{query}")


def locked_response() -> HttpResponse:
    """What summary.json and the feeds of a locked page answer: nothing about the page."""
    response = HttpResponse("This status page needs its password.\n", status=403)
    response["Content-Type"] = "text/plain; charset=utf-8"
    response["Cache-Control"] = "private, no-store"
    return response


def page_view(view: View) -> View:
    """Decorate an HTML public view: a locked password page redirects to its unlock form."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PasswordRequired as locked:
            return unlock_redirect(request, locked.page)

    return cast(View, wrapper)


def data_view(view: View) -> View:
    """Decorate a machine-read public view (summary.json, Atom, RSS): a locked password page
    answers a bare 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PasswordRequired:
            return locked_response()

    return cast(View, wrapper)
