"""The incident pages: the list (open first) with the declaration form, and an incident with
its updates, internal notes and the forms to update, annotate and edit it; members read,
owners and admins write, other organizations see nothing."""

import re
from datetime import UTC, datetime

import pytest

from monitoring.incidents import incident_declare, incident_update_post
from monitoring.models import Incident, IncidentNote
from tests.web.conftest import Markup, form_values, html, visible_text

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(7)</script>"


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Checkout")


@pytest.fixture
def declared(cast, endpoint):
    return incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Checkout is slow",
        endpoints=[endpoint],
        impact="degraded_performance",
        message="We are **looking** into it.",
    )


def declaration(endpoint, **changes):
    """The declaration form as a browser posts it (unchecked boxes are left out)."""
    form = {
        "title": "Payments fail",
        "endpoints": [str(endpoint.pk)],
        "impact": "major_outage",
        "message": "Investigating.",
        "public": "on",
        "notify_subscribers": "on",
        **changes,
    }
    return {name: value for name, value in form.items() if value is not None}


# --- The list -----------------------------------------------------------------------------------


def test_the_list_shows_open_incidents_first(pages, cast, endpoint, declared):
    resolved = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Old outage",
        endpoints=[endpoint],
        impact="major_outage",
    )
    incident_update_post(incident=resolved, author=cast.owner, status="resolved", message="Done.")
    automatic = Incident.objects.create(endpoint=endpoint, started_at=T0)

    response = pages.as_user(cast.member).get("/incidents")

    assert response.status_code == 200
    source = html(response)
    order = [source.index(f'data-incident="{i.pk}"') for i in (automatic, declared, resolved)]
    assert order == sorted(order)
    text = visible_text(response)
    assert "Checkout is down" in text
    assert "Checkout is slow" in text
    assert "Degraded performance" in text


def test_members_get_no_declaration_form(pages, cast, declared):
    response = pages.as_user(cast.member).get("/incidents")

    assert not Markup(html(response)).find("form", action="/incidents/new")
    assert pages.post("/incidents/new", {"title": "x"}).status_code == 403
    assert Incident.objects.count() == 1


def test_an_owner_declares_from_the_list(pages, cast, endpoint):
    page = pages.as_user(cast.owner).get("/incidents")
    assert form_values(page, "/incidents/new")["public"] == "on"

    response = pages.post("/incidents/new", declaration(endpoint))

    incident = Incident.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/incidents/{incident.pk}"
    assert (incident.kind, incident.title, incident.impact, incident.public) == (
        "manual",
        "Payments fail",
        "major_outage",
        True,
    )
    assert list(incident.endpoints.all()) == [endpoint]
    assert incident.updates.get().notify_subscribers is True


def test_unchecked_boxes_declare_a_private_incident_without_mail(pages, cast, endpoint):
    pages.as_user(cast.admin).post(
        "/incidents/new", declaration(endpoint, public=None, notify_subscribers=None)
    )

    incident = Incident.objects.get()
    assert incident.public is False
    assert incident.updates.get().notify_subscribers is False


def test_a_refused_declaration_shows_every_error_and_keeps_the_values(
    pages, cast, endpoint, make_endpoint
):
    foreign = make_endpoint(cast.other_project)

    response = pages.as_user(cast.owner).post(
        "/incidents/new",
        declaration(
            endpoint, title=" ", endpoints=[str(foreign.pk)], impact="total", message="keep"
        ),
    )

    assert response.status_code == 400
    assert not Incident.objects.exists()
    markup = Markup(html(response))
    errors = [t for t, a in markup.tags if a.get("class") == "field-errors"]
    assert len(errors) >= 3
    assert "keep" in html(response)


def picker(response):
    return re.findall(r'name="endpoints" value="([0-9a-f-]{36})"', html(response))


def test_the_declaration_picker_lists_at_most_its_limit_and_finds_by_name(
    pages, cast, endpoint, make_endpoint, monkeypatch
):
    monkeypatch.setattr("monitoring.selectors.PICKER_LIMIT", 2)
    others = [make_endpoint(cast.project, name=f"Search {n}") for n in range(3)]
    make_endpoint(cast.other_project, name="Search of Globex")
    owner = pages.as_user(cast.owner)

    listed = owner.get("/incidents")
    found = owner.get("/incidents", {"q": "search 2"})

    assert picker(listed) == [str(endpoint.pk), str(others[0].pk)]
    assert "Showing 2 of 4 endpoints: find by name to narrow them." in visible_text(listed)
    assert picker(found) == [str(others[2].pk)]
    assert "Globex" not in html(found)


def test_a_refused_declaration_keeps_its_endpoint_past_the_limit_checked(
    pages, cast, endpoint, make_endpoint, monkeypatch
):
    monkeypatch.setattr("monitoring.selectors.PICKER_LIMIT", 1)
    late = make_endpoint(cast.project, name="Zulu")

    response = pages.as_user(cast.owner).post("/incidents/new", declaration(late, title=" "))

    assert response.status_code == 400
    assert picker(response) == [str(endpoint.pk), str(late.pk)]
    assert f'value="{late.pk}" checked' in html(response)


# --- One incident -------------------------------------------------------------------------------


def test_the_incident_page_shows_rendered_updates_and_notes(pages, cast, declared):
    IncidentNote.objects.create(incident=declared, author=cast.admin, text="Paged Bob.")

    response = pages.as_user(cast.member).get(f"/incidents/{declared.pk}")

    assert response.status_code == 200
    assert "We are <strong>looking</strong> into it." in html(response)
    text = visible_text(response)
    assert "Paged Bob." in text
    assert "admin@acme.test" in text
    assert "Checkout" in text
    # Members read; the forms are for owners and admins.
    assert not Markup(html(response)).find("form", action=f"/incidents/{declared.pk}/updates")


def test_update_markdown_and_note_text_stay_inert_on_the_page(pages, cast, declared):
    pages.as_user(cast.owner).post(
        f"/incidents/{declared.pk}/updates",
        {"status": "identified", "message": f"{HOSTILE} [x](javascript:alert(1))"},
    )
    pages.post(f"/incidents/{declared.pk}/notes", {"text": f'{HOSTILE}<img src=x onerror="a()">'})

    response = pages.get(f"/incidents/{declared.pk}")

    source = html(response)
    assert HOSTILE not in source
    assert "<img src=x" not in source
    assert 'href="javascript' not in source
    assert not [a for _, a in Markup(source).tags if any(k.startswith("on") for k in a)]


def test_an_owner_posts_an_update_that_resolves_the_incident(pages, cast, declared):
    page = pages.as_user(cast.owner).get(f"/incidents/{declared.pk}")
    assert form_values(page, f"/incidents/{declared.pk}/updates")["notify_subscribers"] == "on"

    response = pages.post(
        f"/incidents/{declared.pk}/updates",
        {"status": "resolved", "message": "Fixed.", "notify_subscribers": "on"},
    )

    assert response.status_code == 302
    declared.refresh_from_db()
    assert (declared.state, declared.resolved_at is not None) == ("resolved", True)
    after = pages.get(f"/incidents/{declared.pk}")
    statuses = [o["value"] for o in Markup(html(after)).find("option") if o.get("value")]
    assert "investigating" not in statuses  # a resolved incident takes resolved updates only


def test_an_automatic_incident_offers_no_resolved_status(pages, cast, endpoint):
    automatic = Incident.objects.create(endpoint=endpoint, started_at=T0)

    page = pages.as_user(cast.owner).get(f"/incidents/{automatic.pk}")
    refused = pages.post(
        f"/incidents/{automatic.pk}/updates", {"status": "resolved", "message": "Fixed?"}
    )

    source = html(page)
    form = source[source.index(f'action="/incidents/{automatic.pk}/updates"') :]
    form = form[: form.index("</form>")]
    assert 'value="resolved"' not in form
    assert 'value="monitoring"' in form
    assert refused.status_code == 400
    assert "checks" in visible_text(refused)
    automatic.refresh_from_db()
    assert automatic.resolved_at is None


def test_a_blank_update_is_refused_with_the_values_kept(pages, cast, declared):
    response = pages.as_user(cast.owner).post(
        f"/incidents/{declared.pk}/updates", {"status": "monitoring", "message": "  "}
    )

    assert response.status_code == 400
    assert declared.updates.count() == 1
    values = form_values(response, f"/incidents/{declared.pk}/updates")
    assert values["status"] == "monitoring"
    assert "notify_subscribers" not in values  # left unchecked, shown unchecked


def test_an_update_with_the_box_unchecked_mails_no_subscriber(pages, cast, declared):
    pages.as_user(cast.owner).post(
        f"/incidents/{declared.pk}/updates", {"status": "identified", "message": "Quietly."}
    )

    assert declared.updates.get(message="Quietly.").notify_subscribers is False


def test_an_admin_adds_a_note(pages, cast, declared):
    response = pages.as_user(cast.admin).post(
        f"/incidents/{declared.pk}/notes", {"text": "Rolled back v42."}
    )

    assert response.status_code == 302
    assert declared.notes.get().text == "Rolled back v42."
    assert declared.notes.get().author == cast.admin


def test_the_edit_form_hides_an_incident_and_retitles_it(pages, cast, endpoint):
    automatic = Incident.objects.create(endpoint=endpoint, started_at=T0)
    page = pages.as_user(cast.owner).get(f"/incidents/{automatic.pk}")
    values = form_values(page, f"/incidents/{automatic.pk}/edit")
    assert values["title"] == "Checkout is down"
    assert values["public"] == "on"

    response = pages.post(
        f"/incidents/{automatic.pk}/edit",
        {"title": "Checkout unavailable", "impact": "partial_outage"},  # public unchecked
    )

    assert response.status_code == 302
    automatic.refresh_from_db()
    assert (automatic.title, automatic.public, automatic.impact) == (
        "Checkout unavailable",
        False,
        "partial_outage",
    )


@pytest.mark.parametrize("action", ["updates", "notes", "edit"])
def test_members_cannot_write_on_an_incident(pages, cast, declared, action):
    response = pages.as_user(cast.member).post(
        f"/incidents/{declared.pk}/{action}",
        {"status": "identified", "message": "x", "text": "x", "title": "x"},
    )

    assert response.status_code == 403
    declared.refresh_from_db()
    assert (declared.state, declared.title) == ("investigating", "Checkout is slow")
    assert not declared.notes.exists()


@pytest.mark.parametrize("action", ["", "/updates", "/notes", "/edit"])
def test_another_organizations_incident_is_a_404(pages, cast, make_endpoint, action):
    foreign = incident_declare(
        organization=cast.other_org,
        author=cast.outsider,
        title="Globex down",
        endpoints=[make_endpoint(cast.other_project)],
        impact="major_outage",
    )
    pages.as_user(cast.owner)

    if action:
        response = pages.post(f"/incidents/{foreign.pk}{action}", {"text": "x", "title": "x"})
    else:
        response = pages.get(f"/incidents/{foreign.pk}")

    assert response.status_code == 404
    assert not foreign.notes.exists()


def test_a_member_never_sees_an_automatic_incident_of_a_hidden_project(pages, cast, make_endpoint):
    hidden = make_endpoint(cast.org.projects.create(name="Hidden"), name="Billing")
    incident = Incident.objects.create(endpoint=hidden, started_at=T0)

    listed = pages.as_user(cast.member).get("/incidents")

    assert "Billing" not in visible_text(listed)
    assert pages.get(f"/incidents/{incident.pk}").status_code == 404


def test_signed_out_visitors_go_to_the_login_page(pages, declared):
    for path in ("/incidents", f"/incidents/{declared.pk}"):
        response = pages.as_user(None).get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/login")


def test_the_overview_links_a_declared_incident(pages, cast, declared):
    response = pages.as_user(cast.member).get("/")

    assert response.status_code == 200
    assert Markup(html(response)).find("a", href=f"/incidents/{declared.pk}")


def test_the_endpoint_page_links_its_incidents(pages, cast, endpoint):
    automatic = Incident.objects.create(endpoint=endpoint, started_at=T0)

    response = pages.as_user(cast.member).get(f"/endpoints/{endpoint.pk}")

    assert Markup(html(response)).find("a", href=f"/incidents/{automatic.pk}")


def test_the_list_reads_in_a_fixed_number_of_queries(
    pages, cast, endpoint, django_assert_max_num_queries
):
    def add(n):
        for i in range(n):
            incident = incident_declare(
                organization=cast.org,
                author=cast.owner,
                title=f"I{i}",
                endpoints=[endpoint],
                impact="major_outage",
                message="m",
            )
            IncidentNote.objects.create(incident=incident, author=cast.owner, text="n")
            at = T0.replace(minute=i)
            Incident.objects.create(endpoint=endpoint, started_at=at, resolved_at=at)

    pages.as_user(cast.owner)
    add(1)
    with django_assert_max_num_queries(25) as few:
        pages.get("/incidents")
    add(10)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert pages.get("/incidents").status_code == 200
