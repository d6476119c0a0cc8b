"""The status page management pages: the list for everyone, the form and the deletion for
owners and admins; the same rules as the API, shown beside the fields."""

import pytest
from django.contrib.auth.hashers import check_password

from accounts.models import AuditEvent
from statuspages import validation
from statuspages.forms import SEE_SECTIONS
from statuspages.models import Component, Section, StatusPage
from tests.helpers import admin_url

LIST = "/status-pages"
NEW = "/status-pages/new"


@pytest.fixture
def site(cast, make_endpoint):
    return make_endpoint(cast.project, name="Website")


@pytest.fixture
def db_endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Database", target="https://example.com/db")


def signed_in(client, user):
    client.force_login(user)
    return client


def form(**fields):
    """A posted form with two section rows and nothing shown."""
    data = {
        "name": "Acme status",
        "slug": "acme",
        "title": "",
        "description": "",
        "visibility": "public",
        "password": "",
        "custom_domain": "",
        "uptime_days": "90",
        "section_rows": "2",
        "section-1-name": "",
        "section-1-position": "1",
        "section-2-name": "",
        "section-2-position": "2",
    }
    return {**data, **fields}


def edit_url(page):
    return f"/status-pages/{page.pk}/edit"


def delete_url(page):
    return f"/status-pages/{page.pk}/delete"


# --- The list ---------------------------------------------------------------------------------


def test_the_list_shows_the_organizations_pages_with_their_public_links(
    client, cast, make_status_page, site
):
    make_status_page(cast, [site])
    make_status_page(cast, slug="partners", name="Partners", custom_domain="status.acme.example")
    make_status_page(cast, slug="theirs", name="Globex status", organization=cast.other_org)

    response = signed_in(client, cast.admin).get(LIST)

    text = response.content.decode()
    assert response.status_code == 200
    assert "https://healthmon.test/status/acme" in text
    assert 'href="https://status.acme.example/"' in text
    assert "Globex status" not in text
    assert f'href="{edit_url(StatusPage.objects.get(slug="acme"))}"' in text
    assert 'href="/status-pages"' in text  # the nav link


def test_members_see_the_list_without_the_management_links(client, cast, make_status_page):
    page = make_status_page(cast)

    response = signed_in(client, cast.member).get(LIST)

    text = response.content.decode()
    assert response.status_code == 200
    assert "Acme status" in text
    assert NEW not in text
    assert edit_url(page) not in text
    assert delete_url(page) not in text


def test_signed_out_visitors_go_to_the_login_page(client):
    response = client.get(LIST)

    assert response.status_code == 302
    assert "/login" in response["Location"]


# --- Create -----------------------------------------------------------------------------------


def test_the_new_form_renders_with_the_organizations_endpoints(client, cast, make_endpoint, site):
    make_endpoint(cast.other_project, name="Globex API")

    response = signed_in(client, cast.owner).get(NEW)

    text = response.content.decode()
    assert response.status_code == 200
    assert f'name="endpoint-{site.pk}-section"' in text
    assert "Globex API" not in text
    assert 'name="section-3-name"' not in text  # two empty rows on a new page
    assert 'value="90"' in text


def test_create_a_page_with_ordered_sections(client, cast, site, db_endpoint):
    data = form(
        **{
            "section-1-name": "Storage",
            "section-1-position": "2",
            "section-2-name": "Front",
            "section-2-position": "1",
            f"endpoint-{site.pk}-section": "2",
            f"endpoint-{db_endpoint.pk}-section": "1",
            "show_response_times": "on",
            "uptime_days": "30",
        }
    )

    response = signed_in(client, cast.owner).post(NEW, data)

    assert response.status_code == 302, response.content.decode()
    page = StatusPage.objects.get()
    assert (page.organization, page.uptime_days, page.show_response_times) == (cast.org, 30, True)
    sections = list(Section.objects.filter(page=page).order_by("position"))
    assert [s.name for s in sections] == ["Front", "Storage"]
    assert [c.endpoint for c in sections[0].components.all()] == [site]
    assert [c.endpoint for c in sections[1].components.all()] == [db_endpoint]
    assert AuditEvent.objects.filter(action="status_page.created").exists()


def test_positions_order_the_endpoints_of_a_section(client, cast, site, db_endpoint):
    data = form(
        **{
            "section-1-name": "All",
            f"endpoint-{site.pk}-section": "1",
            f"endpoint-{site.pk}-position": "2",
            f"endpoint-{db_endpoint.pk}-section": "1",
            f"endpoint-{db_endpoint.pk}-position": "1",
        }
    )

    signed_in(client, cast.owner).post(NEW, data)

    assert [c.endpoint for c in Component.objects.order_by("position")] == [db_endpoint, site]


def test_endpoints_sharing_a_name_and_a_position_are_both_kept(client, cast, make_endpoint):
    twins = [make_endpoint(cast.project, name="API") for _ in range(2)]
    data = form(**{"section-1-name": "All", **{f"endpoint-{e.pk}-section": "1" for e in twins}})

    response = signed_in(client, cast.owner).post(NEW, data)

    assert response.status_code == 302
    assert {c.endpoint for c in Component.objects.all()} == set(twins)


def test_a_password_page_stores_a_hash(client, cast):
    data = form(visibility="password", password="partners-only-42")

    signed_in(client, cast.owner).post(NEW, data)

    assert check_password("partners-only-42", StatusPage.objects.get().password_hash)


def test_errors_are_shown_beside_their_fields_and_nothing_is_created(
    client, cast, make_status_page, site
):
    make_status_page(
        cast, slug="taken", custom_domain="status.globex.example", organization=cast.other_org
    )
    data = form(
        slug="taken",
        visibility="password",
        custom_domain="status.globex.example",
        uptime_days="400",
        **{f"endpoint-{site.pk}-section": "1"},  # row 1 has no name
    )

    response = signed_in(client, cast.owner).post(NEW, data)

    text = response.content.decode()
    assert response.status_code == 400
    for message in [
        validation.SLUG_TAKEN,
        validation.DOMAIN_TAKEN,
        validation.UPTIME_RANGE,
        validation.PASSWORD_NEEDED,
        validation.REQUIRED,
        SEE_SECTIONS,
    ]:
        assert message.replace("`", "&#x60;") in text or message in text, message
    assert 'id="section-1-errors"' in text
    assert "Globex" not in text
    assert not StatusPage.objects.filter(organization=cast.org).exists()


def test_an_unknown_section_row_or_a_bad_position_is_shown(client, cast, site):
    data = form(**{f"endpoint-{site.pk}-section": "7", "section-2-position": "x"})

    response = signed_in(client, cast.owner).post(NEW, data)

    text = response.content.decode()
    assert response.status_code == 400
    assert "Choose one of the section rows." in text
    assert "Enter a whole number." in text
    assert not StatusPage.objects.exists()


# --- Edit -------------------------------------------------------------------------------------


def test_the_edit_form_shows_the_stored_page(client, cast, make_status_page, site):
    page = make_status_page(cast, [site], visibility="password", password="partners-only-42")

    response = signed_in(client, cast.admin).get(edit_url(page))

    text = response.content.decode()
    assert response.status_code == 200
    assert 'value="Section 0"' in text
    assert 'name="section-3-name"' in text  # one used row and two empty ones
    assert "partners-only-42" not in text
    assert "bcrypt" not in text
    assert '<option value="1" selected>Section 1: Section 0</option>' in text


def test_edit_replaces_the_sections_and_keeps_the_password(
    client, cast, make_status_page, site, db_endpoint
):
    page = make_status_page(cast, [site], visibility="password", password="partners-only-42")
    data = form(
        name="Renamed",
        visibility="password",
        **{
            "section_rows": "3",
            "section-1-name": "",
            "section-2-name": "Data",
            "section-3-name": "Web",
            "section-3-position": "3",
            f"endpoint-{db_endpoint.pk}-section": "2",
            f"endpoint-{site.pk}-section": "3",
        },
    )

    response = signed_in(client, cast.owner).post(edit_url(page), data)

    assert response.status_code == 302, response.content.decode()
    page.refresh_from_db()
    assert page.name == "Renamed"
    assert check_password("partners-only-42", page.password_hash)
    sections = list(Section.objects.filter(page=page).order_by("position"))
    assert [s.name for s in sections] == ["Data", "Web"]
    assert [c.endpoint for c in sections[1].components.all()] == [site]


def test_another_organizations_page_is_a_404(client, cast, make_status_page):
    page = make_status_page(cast)
    signed_in(client, cast.outsider)

    assert client.get(edit_url(page)).status_code == 404
    assert client.post(edit_url(page), form(name="Taken")).status_code == 404
    assert client.post(delete_url(page)).status_code == 404
    assert StatusPage.objects.get().name == "Acme status"


# --- Delete -----------------------------------------------------------------------------------


def test_delete_asks_then_deletes_on_post(client, cast, make_status_page, site):
    page = make_status_page(cast, [site])
    signed_in(client, cast.owner)

    asked = client.get(delete_url(page))
    assert asked.status_code == 200
    assert f'action="{delete_url(page)}"' in asked.content.decode()
    assert StatusPage.objects.exists()

    deleted = client.post(delete_url(page))

    assert deleted.status_code == 302
    assert not StatusPage.objects.exists()
    assert AuditEvent.objects.filter(action="status_page.deleted").exists()


# --- Members ----------------------------------------------------------------------------------


def test_members_cannot_create_change_or_delete(client, cast, make_status_page):
    page = make_status_page(cast)
    signed_in(client, cast.member)

    for response in [
        client.get(NEW),
        client.post(NEW, form(slug="mine")),
        client.get(edit_url(page)),
        client.post(edit_url(page), form(name="Mine")),
        client.get(delete_url(page)),
        client.post(delete_url(page)),
    ]:
        assert response.status_code == 403
    assert list(StatusPage.objects.values_list("slug", "name")) == [("acme", "Acme status")]


# --- Django admin -------------------------------------------------------------------------------


def test_the_admin_checks_slug_domain_and_uptime_as_the_api_does(
    staff_client, cast, make_status_page
):
    page = make_status_page(cast)
    make_status_page(cast, slug="other", custom_domain="status.acme.example")
    data = {
        "organization": str(cast.org.pk),
        "name": "Acme status",
        "slug": "Bad Slug",
        "title": "",
        "description": "",
        "visibility": "public",
        "custom_domain": "status.acme.example",
        "uptime_days": "10",
        "updated_at_0": "2030-01-01",
        "updated_at_1": "00:00:00",
        "sections-TOTAL_FORMS": "0",
        "sections-INITIAL_FORMS": "0",
        "components-TOTAL_FORMS": "0",
        "components-INITIAL_FORMS": "0",
    }

    response = staff_client.post(admin_url(page, "change", page.pk), data)

    text = response.content.decode()
    assert response.status_code == 200
    for message in (validation.BAD_SLUG, validation.DOMAIN_TAKEN, validation.UPTIME_RANGE):
        assert message in text
    page.refresh_from_db()
    assert page.slug == "acme"
    assert "password_hash" not in text
