"""Fetching the accounts' organization-owned objects for a caller, and who may see a page.

Each app fetches its own objects in its `access.py`, with `get_or_404` and the visible
projects of `accounts.models`.

Anything outside the caller's organization (or, for members, outside their projects) is
reported exactly like a missing id: a 404, so that no other tenant's ids can be probed.
"""

import uuid
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from accounts.models import Invitation, Project, User
from healthmon.errors import InvalidInput

M = TypeVar("M", bound=models.Model)


def get_or_404(queryset: models.QuerySet[M], pk: object) -> M:
    """The row of `queryset` with that id; a malformed or unknown id is a 404 alike."""
    try:
        return queryset.get(pk=uuid.UUID(str(pk)))
    except (ValueError, ObjectDoesNotExist) as exc:
        raise Http404 from exc


def access_user(caller: User, user_id: object) -> User:
    """A user of the caller's organization."""
    return get_or_404(User.objects.for_org(caller.organization), user_id)


def access_project(caller: User, project_id: object) -> Project:
    """A project the caller can see."""
    return get_or_404(Project.objects.visible_to(caller), project_id)


def access_pending_invitation(caller: User, invitation_id: object) -> Invitation:
    """A pending invitation of the caller's organization."""
    queryset = Invitation.objects.for_org(caller.organization).pending()
    return get_or_404(queryset, invitation_id)


def get_all_or_invalid(queryset: QuerySet[M], ids: Iterable[uuid.UUID], noun: str) -> list[M]:
    """The rows of the caller's queryset with these ids, for a request body; an id it does not
    hold is a validation error naming every such id."""
    wanted = set(ids)
    found = list(queryset.filter(pk__in=wanted))
    missing = wanted - {row.pk for row in found}
    if missing:
        raise InvalidInput(
            {"non_field_errors": [f"Unknown {noun}: {pk}." for pk in sorted(map(str, missing))]}
        )
    return found


def access_projects(caller: User, project_ids: Iterable[uuid.UUID]) -> list[Project]:
    """Projects by id for a request body; an id the caller cannot see is a validation error."""
    return get_all_or_invalid(Project.objects.visible_to(caller), project_ids, "project")


def page_user(request: HttpRequest) -> User:
    """The signed-in user of a page behind `member_required`."""
    user = request.user
    if not isinstance(user, User):  # `login_required` lets only real users through
        raise PermissionDenied
    return user


def member_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in organization users only; others go to the login page and come back."""
    return login_required(view)


def manager_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in owners and admins only; members get a 403 page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not page_user(request).is_manager:
            raise PermissionDenied("This page needs the owner or admin role.")
        return view(request, *args, **kwargs)

    return login_required(wrapped)
