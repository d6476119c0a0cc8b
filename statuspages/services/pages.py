"""Status page writes people make: create, change (sections and components replaced
wholesale, in order) and delete, each in the audit log."""

import logging

from django.contrib.auth.hashers import make_password
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Organization
from healthmon.errors import InvalidInput
from statuspages import validation
from statuspages.cache import page_cache_bump
from statuspages.middleware import domain_cache_forget
from statuspages.models import Component, Section, StatusPage, Visibility
from statuspages.validation import PageInput, SectionIn

logger = logging.getLogger(__name__)

# Fields compared to tell the audit log which changed (never their values for the password).
_PLAIN_FIELDS = [
    "name",
    "slug",
    "title",
    "description",
    "visibility",
    "custom_domain",
    "uptime_days",
    "show_response_times",
]


@transaction.atomic
def status_page_create(*, organization: Organization, data: PageInput) -> StatusPage:
    """Create a page of the organization with its sections and components."""
    page = StatusPage(organization=organization)
    _apply(page, data)
    _save(page, force_insert=True)
    _set_sections(page, data.sections or ())
    _forget_on_commit(page.pk, page.custom_domain)
    audit_record(
        action=AuditAction.STATUS_PAGE_CREATED,
        organization_id=organization.pk,
        target=page,
        details={"slug": page.slug, "visibility": page.visibility},
    )
    return page


@transaction.atomic
def status_page_update(*, page: StatusPage, data: PageInput) -> StatusPage:
    """Change a page to `data`; its sections and components are replaced when `data` has
    sections. The audit log names the fields that changed, never a value of the password."""
    before = {field: getattr(page, field) for field in _PLAIN_FIELDS}
    old_domain = page.custom_domain
    _apply(page, data)
    changed = {field for field in _PLAIN_FIELDS if getattr(page, field) != before[field]}
    if data.password is not None:
        changed.add("password")
    page.updated_at = timezone.now()
    _save(page)
    if data.sections is not None:
        _set_sections(page, data.sections)
        changed.add("sections")
    _forget_on_commit(page.pk, old_domain, page.custom_domain)
    audit_record(
        action=AuditAction.STATUS_PAGE_UPDATED,
        organization_id=page.organization_id,
        target=page,
        details={"slug": page.slug, "fields": sorted(changed)},
    )
    return page


@transaction.atomic
def status_page_delete(*, page: StatusPage) -> None:
    """Delete a page with its sections, components and subscribers, in the audit log."""
    audit_record(
        action=AuditAction.STATUS_PAGE_DELETED,
        organization_id=page.organization_id,
        target=page,
        details={"slug": page.slug},
    )
    _forget_on_commit(page.pk, page.custom_domain)
    page.delete()


def _forget_on_commit(page_id: object, *domains: str | None) -> None:
    """Once committed, readers see the change at once: the page's cached responses go stale
    and the cached answers for its old and new domains (a negative one for a new domain) go."""

    def forget() -> None:
        try:
            page_cache_bump(page_id)
            domain_cache_forget(*domains)
        except Exception:  # the write stands; readers see it within the caches' few seconds
            logger.warning("status page caches not cleared: the cache failed", exc_info=True)

    transaction.on_commit(forget)


def _apply(page: StatusPage, data: PageInput) -> None:
    """Set the page's fields; a page that stops asking for a password forgets its hash, so
    turning `password` back on asks for a new one rather than reviving a forgotten one."""
    page.name, page.slug, page.title = data.name, data.slug, data.title
    page.description, page.visibility = data.description, data.visibility
    page.custom_domain, page.uptime_days = data.custom_domain, data.uptime_days
    page.show_response_times = data.show_response_times
    if data.password is not None:
        page.password_hash = make_password(data.password)
    elif data.visibility != Visibility.PASSWORD:
        page.password_hash = ""


def _save(page: StatusPage, *, force_insert: bool = False) -> None:
    """Save; a slug or domain another request took since it was checked is refused as the
    check refuses it."""
    try:
        with transaction.atomic():
            page.save(force_insert=force_insert)
    except IntegrityError as exc:
        taken = StatusPage.objects.exclude(pk=page.pk)
        errors = {}
        if taken.filter(slug=page.slug).exists():
            errors["slug"] = [validation.SLUG_TAKEN]
        if page.custom_domain and taken.filter(custom_domain=page.custom_domain).exists():
            errors["custom_domain"] = [validation.DOMAIN_TAKEN]
        if not errors:
            raise
        raise InvalidInput(errors) from exc


def _set_sections(page: StatusPage, sections: tuple[SectionIn, ...] | list[SectionIn]) -> None:
    """Replace the page's sections and components by these, positions in the given order."""
    Section.objects.filter(page=page).delete()  # cascades to their components
    rows = Section.objects.bulk_create(
        Section(page=page, name=section.name, position=index)
        for index, section in enumerate(sections)
    )
    Component.objects.bulk_create(
        Component(page=page, section=row, endpoint=endpoint, position=position)
        for row, section in zip(rows, sections, strict=True)
        for position, endpoint in enumerate(section.endpoints)
    )
