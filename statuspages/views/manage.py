"""The status page management pages: the organization's pages, a form to create or change
one, and a confirmation to delete one.

As in the API, every user of the organization sees the list; owners and admins create,
change and delete (the other routes answer members with the 403 page).
"""

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from accounts.access import manager_required, member_required, page_user
from accounts.models import User
from monitoring.models import Endpoint
from statuspages import services
from statuspages.access import access_status_page
from statuspages.feeds import page_url
from statuspages.forms import StatusPageForm
from statuspages.models import StatusPage


def _endpoints(user: User) -> list[Endpoint]:
    """The endpoints the user may put on a page, by project and name."""
    visible = Endpoint.objects.visible_to(user).select_related("project")
    return list(visible.without_secrets().order_by("project__name", "name", "id"))


@member_required
@require_safe
def status_pages(request: HttpRequest) -> HttpResponse:
    """The organization's status pages with their public links."""
    user = page_user(request)
    pages = list(
        StatusPage.objects.for_org(user.organization).annotate(
            section_count=Count("sections", distinct=True),
            component_count=Count("components", distinct=True),
        )
    )
    for page in pages:
        page.public_url = page_url(page)  # type: ignore[attr-defined]
    return render(request, "statuspages/manage_list.html", {"pages": pages})


def _form_page(request: HttpRequest, form: StatusPageForm) -> HttpResponse:
    """The form, as posted (400 while it has errors) or as stored."""
    status = 400 if form.is_bound and form.errors else 200
    context = {"form": form, "page": form.page, "row_count": len(form.sections)}
    return render(request, "statuspages/manage_form.html", context, status=status)


@manager_required
@require_http_methods(["GET", "HEAD", "POST"])
def status_page_new(request: HttpRequest) -> HttpResponse:
    """Create a status page."""
    user = page_user(request)
    data = request.POST if request.method == "POST" else None
    form = StatusPageForm(data, user=user, endpoints=_endpoints(user))
    if data is None or not form.is_valid() or form.checked is None:
        return _form_page(request, form)
    page = services.status_page_create(organization=user.organization, data=form.checked)
    messages.success(request, f"The status page {page.name} is created.")
    return redirect("status-pages")


@manager_required
@require_http_methods(["GET", "HEAD", "POST"])
def status_page_edit(request: HttpRequest, page_id: str) -> HttpResponse:
    """Change a status page; its sections are replaced by the rows as posted."""
    user = page_user(request)
    page = access_status_page(user, page_id)
    data = request.POST if request.method == "POST" else None
    form = StatusPageForm(data, user=user, endpoints=_endpoints(user), page=page)
    if data is None or not form.is_valid() or form.checked is None:
        return _form_page(request, form)
    services.status_page_update(page=page, data=form.checked)
    messages.success(request, f"The status page {page.name} is saved.")
    return redirect("status-pages")


@manager_required
@require_http_methods(["GET", "HEAD", "POST"])
def status_page_delete(request: HttpRequest, page_id: str) -> HttpResponse:
    """Ask, then delete a status page with its sections and subscribers."""
    page = access_status_page(page_user(request), page_id)
    if request.method != "POST":
        return render(request, "statuspages/manage_delete.html", {"page": page})
    services.status_page_delete(page=page)
    messages.success(request, f"The status page {page.name} is deleted.")
    return redirect("status-pages")
