"""API key pages: the keys a user manages, creating one (shown once) and revoking; and the
removal of a team member, which revokes the member's keys too."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.access import access_user, manager_required, member_required, page_user
from accounts.views import team_action
from apikeys import services
from apikeys.access import access_api_key
from apikeys.api.serializers import ApiKeyCreateSerializer
from apikeys.models import ApiKey, Scope
from healthmon.pages import PageForm


def _page(
    request: HttpRequest, form: PageForm | None = None, created: tuple[ApiKey, str] | None = None
) -> HttpResponse:
    keys = (
        ApiKey.objects.visible_to(page_user(request))
        .not_revoked()
        .select_related("created_by")
        .order_by("-created_at")
    )
    context = {
        "keys": keys,
        "scopes": Scope.choices,
        "form": form or PageForm(),
        "created": created[0] if created else None,
        "created_key": created[1] if created else None,
    }
    status = form.status if form is not None and form.errors else 200
    return render(request, "apikeys/api_keys.html", context, status=status)


@member_required
def api_keys_page(request: HttpRequest) -> HttpResponse:
    """The keys the user manages: all of the organization's for owners and admins."""
    return _page(request)


@never_cache
@member_required
@require_POST
def api_key_create(request: HttpRequest) -> HttpResponse:
    """Issue a key and show it once, in this answer only (never cached, never stored)."""
    form = PageForm.check(ApiKeyCreateSerializer, request.POST)
    created = form.attempt(services.api_key_create, creator=page_user(request))
    if created is None:
        return _page(request, form)
    return _page(request, created=created)


@member_required
@require_POST
def api_key_revoke(request: HttpRequest, api_key_id: str) -> HttpResponse:
    """Revoke a key: it answers 401 from its next request on."""
    api_key = access_api_key(page_user(request), api_key_id)
    services.api_keys_revoke(api_keys=ApiKey.objects.filter(pk=api_key.pk))
    messages.success(request, f"The key {api_key.name} is revoked.")
    return redirect("api-keys")


@manager_required
@require_POST
def team_remove(request: HttpRequest, user_id: str) -> HttpResponse:
    """Remove a user from the organization; its sessions, tokens and keys stop working."""
    target = access_user(page_user(request), user_id)
    return team_action(
        request,
        services.member_remove,
        f"{target.email} was removed.",
        actor=page_user(request),
        user=target,
    )
