"""Fetching status pages for a caller; another organization's page is a 404.

Every user of an organization reads its pages (they are what the organization shows the
world); writing them is for owners and admins, checked by the views.
"""

from django.db.models import Prefetch, QuerySet

from accounts.access import get_or_404
from accounts.models import User
from statuspages.models import Component, Section, StatusPage


def status_pages_of(caller: User) -> QuerySet[StatusPage]:
    """The caller's organization's pages, their sections and components loaded in order
    (three queries for any number of pages)."""
    sections = Section.objects.order_by("position", "id").prefetch_related(
        Prefetch("components", Component.objects.order_by("position", "id"))
    )
    pages = StatusPage.objects.for_org(caller.organization)
    return pages.prefetch_related(Prefetch("sections", sections))


def access_status_page(caller: User, page_id: object) -> StatusPage:
    """A status page of the caller's organization, with its sections and components."""
    return get_or_404(status_pages_of(caller), page_id)
