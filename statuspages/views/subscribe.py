"""Subscriptions to a status page, no login: subscribe, confirm and unsubscribe.

The mailed links carry the subscriber's token, which is the only credential. Opening a link
(GET) never changes anything, since mail scanners fetch links to check them: the page it
shows has a button that POSTs. The unsubscribe POST is CSRF-exempt so that a mail client's
RFC 8058 one-click request (`List-Unsubscribe=One-Click`, no cookie) works. So is the
subscribe POST: the public page carrying the form is served from a cache shared by all its
readers, so a CSRF token in it would be somebody else's; a forged subscribe gains nothing
over posting it directly, and the double opt-in and the throttles bound it.
"""

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from accounts.audit import client_ip
from healthmon.pages import PageForm
from statuspages.gates import PasswordRequired, page_path, public_page, unlock_redirect
from statuspages.models import StatusPage, Visibility
from statuspages.services.subscribers import (
    subscribe_address_wait,
    subscribe_ip_wait,
    subscriber_by_token,
    subscriber_confirm,
    subscriber_email_clean,
    subscriber_subscribe,
    subscriber_unsubscribe,
)


def _page(request: HttpRequest, slug: str) -> StatusPage:
    """The page if this reader may see it; private pages take no subscribers (their news
    is for members, who have the dashboard), and answer as an unknown page."""
    page = public_page(request, slug)
    if page.visibility == Visibility.PRIVATE:
        raise Http404("no such status page")
    return page


def _show(
    request: HttpRequest, name: str, page: StatusPage | None, status: int = 200, **extra: Any
) -> HttpResponse:
    links = {}
    if page is not None:  # as this reader reached it: at the root on its custom domain
        links = {
            "page_home": page_path(request, page),
            "subscribe_path": page_path(request, page, "subscribe"),
        }
    context = {"page": page, "here": request.path, **links, **extra}
    return render(request, f"statuspages/subscribe_{name}.html", context, status=status)


def _unknown_link(request: HttpRequest) -> HttpResponse:
    """The same 404 for an unknown page, a made-up, mistyped or spent token: nothing
    changed, and nothing named."""
    return _show(request, "unknown", None, status=404)


def _throttled(request: HttpRequest, page: StatusPage, form: PageForm, wait: int) -> HttpResponse:
    form.errors["__all__"] = [f"Too many requests. Try again in {wait} seconds."]
    response = _show(request, "form", page, status=429, subscribe_form=form)
    response["Retry-After"] = str(wait)
    return response


@csrf_exempt
@require_POST
def subscribe(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask for a page's incident updates by mail: the same "check your inbox" answer
    whether the address is new, waiting or confirmed already. A password page not unlocked
    in this browser session (it ended while the page was open) sends the reader to its
    form, and back to the page."""
    try:
        page = _page(request, slug)
    except PasswordRequired as locked:
        return unlock_redirect(request, locked.page, back_to=page_path(request, locked.page))
    form = PageForm(request.POST)
    wait = subscribe_ip_wait(ip=client_ip(request) or "unknown")
    if wait is not None:
        return _throttled(request, page, form, wait)
    form.validated = {"email": str(request.POST.get("email", ""))}
    form.attempt(subscriber_email_clean)
    if not form.is_valid:
        return _show(request, "form", page, status=400, subscribe_form=form)
    wait = subscribe_address_wait(email=form.validated["email"])
    if wait is not None:
        return _throttled(request, page, form, wait)
    subscriber_subscribe(page=page, email=form.validated["email"])
    return _show(request, "sent", page)


# The mailed links below find their page through the token, not the page's gate: a mail
# client has neither a password session nor a member login, and the token is proof enough.


@require_http_methods(["GET", "POST"])
def confirm(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    """Confirm an address: GET shows the button, POST confirms."""
    if request.method == "GET":
        subscriber = subscriber_by_token(slug=slug, token=token)
        if subscriber is None:
            return _unknown_link(request)
        return _show(request, "confirm", subscriber.page, token=token)
    subscriber = subscriber_confirm(slug=slug, token=token)
    if subscriber is None:
        return _unknown_link(request)
    return _show(request, "confirmed", subscriber.page, token=token)


@csrf_exempt  # RFC 8058 one-click: the token in the URL is the credential
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    """Stop an address's mails: GET shows the button, POST (a person's or a mail client's
    one-click request) unsubscribes."""
    if request.method == "GET":
        subscriber = subscriber_by_token(slug=slug, token=token)
        if subscriber is None:
            return _unknown_link(request)
        return _show(request, "unsubscribe", subscriber.page, token=token)
    page = subscriber_unsubscribe(slug=slug, token=token)
    if page is None:
        return _unknown_link(request)
    return _show(request, "unsubscribed", page)
