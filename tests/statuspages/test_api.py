"""Status pages over the API: create, read, change (sections replaced in order), delete;
who reads and writes; every bad field named at once; the password never answered."""

import uuid
from typing import Any

import pytest
from django.contrib.auth.hashers import check_password

from accounts.models import AuditEvent
from healthmon.errors import InvalidInput
from statuspages import validation
from statuspages.models import Component, Section, StatusPage
from tests.helpers import assert_problem, queries_of_get

URL = "/api/v1/status-pages"
FIELDS = {
    "id",
    "name",
    "slug",
    "title",
    "description",
    "visibility",
    "custom_domain",
    "sections",
    "uptime_days",
    "show_response_times",
    "url",
    "badges",
    "created_at",
}
PASSWORD = "partners-only-42"


@pytest.fixture
def site(cast, make_endpoint):
    return make_endpoint(cast.project, name="Website")


@pytest.fixture
def api_server(cast, make_endpoint):
    return make_endpoint(cast.project, name="API", target="https://example.com/api")


def body(**fields: Any) -> dict[str, Any]:
    return {"name": "Acme status", "slug": "acme", **fields}


def test_create_a_page_with_sections(api, cast, site, api_server):
    sections = [
        {"name": "Core", "endpoints": [str(api_server.pk), str(site.pk)]},
        {"name": "Empty", "endpoints": []},
    ]

    response = api.as_user(cast.owner).post(URL, body(sections=sections))

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == FIELDS
    assert data["sections"] == sections
    assert (data["visibility"], data["uptime_days"], data["show_response_times"]) == (
        "public",
        90,
        False,
    )
    assert data["custom_domain"] is None
    assert data["url"] == "https://healthmon.test/status/acme"
    page = StatusPage.objects.get()
    badge = f"https://healthmon.test/badge/{page.badge_key}/status.svg"
    assert data["badges"]["status_svg"] == badge
    assert page.organization == cast.org
    assert [c.endpoint for c in Component.objects.order_by("position")] == [api_server, site]
    assert AuditEvent.objects.filter(action="status_page.created").count() == 1


# --- Create, read, change, delete -------------------------------------------------------------


def test_the_password_is_stored_as_a_bcrypt_hash_and_never_answered(api, cast):
    api.as_user(cast.owner)

    created = api.post(URL, body(visibility="password", password=PASSWORD))

    assert created.status_code == 201, created.content
    page = StatusPage.objects.get()
    assert page.password_hash.startswith("bcrypt_sha256$")
    assert check_password(PASSWORD, page.password_hash)
    pk = created.json()["id"]
    answers = [
        created,
        api.get(URL),
        api.get(f"{URL}/{pk}"),
        api.patch(f"{URL}/{pk}", {"password": "another-secret-99"}),
    ]
    for response in answers:
        assert response.status_code in (200, 201)
        text = response.content.decode()
        assert "password_hash" not in text
        assert '"password":' not in text
        assert PASSWORD not in text
        assert "bcrypt" not in text
    assert not any(
        "secret" in str(event.details) or PASSWORD in str(event.details)
        for event in AuditEvent.objects.all()
    )


def test_the_url_is_the_custom_domain_when_there_is_one(api, cast):
    response = api.as_user(cast.owner).post(URL, body(custom_domain="Status.Acme.Example."))

    assert response.status_code == 201, response.content
    assert response.json()["custom_domain"] == "status.acme.example"
    assert response.json()["url"] == "https://status.acme.example/"


def test_list_and_retrieve(api, cast, site, make_status_page):
    page = make_status_page(cast, [site])
    make_status_page(cast, slug="second", name="Second")
    api.as_user(cast.admin)

    listed = api.get(URL).json()
    one = api.get(f"{URL}/{page.pk}").json()

    assert listed["count"] == 2
    assert [p["slug"] for p in listed["results"]] == ["acme", "second"]
    assert one == listed["results"][0]
    assert one["sections"] == [{"name": "Section 0", "endpoints": [str(site.pk)]}]


def test_the_list_filters_by_visibility(api, cast, make_status_page):
    make_status_page(cast)
    make_status_page(cast, slug="inside", visibility="private")
    api.as_user(cast.owner)

    assert [p["slug"] for p in api.get(f"{URL}?visibility=private").json()["results"]] == ["inside"]
    assert_problem(api.get(f"{URL}?visibility=secret"), 400, "validation_error")


def test_the_list_reads_in_a_fixed_number_of_queries(api, cast, site, api_server, make_status_page):
    make_status_page(cast, [site], [api_server])
    api.as_user(cast.owner)
    few = queries_of_get(api, URL)
    for n in range(4):
        make_status_page(cast, [site, api_server], [], slug=f"more-{n}")

    assert queries_of_get(api, URL) == few


def test_patch_changes_the_fields_sent_and_sets_updated_at(api, cast, site, make_status_page):
    page = make_status_page(cast, [site])
    before = page.updated_at
    api.as_user(cast.owner)

    response = api.patch(
        f"{URL}/{page.pk}",
        {"title": "All systems", "uptime_days": 30, "show_response_times": True},
    )

    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["title"], data["uptime_days"], data["show_response_times"]) == (
        "All systems",
        30,
        True,
    )
    assert data["sections"] == [{"name": "Section 0", "endpoints": [str(site.pk)]}]
    page.refresh_from_db()
    assert page.updated_at > before
    event = AuditEvent.objects.get(action="status_page.updated")
    assert event.details["fields"] == ["show_response_times", "title", "uptime_days"]


def test_patch_replaces_the_sections_keeping_their_order(
    api, cast, make_endpoint, site, make_status_page
):
    db = make_endpoint(cast.project, name="Database", target="https://example.com/db")
    queue = make_endpoint(cast.project, name="Queue", target="https://example.com/q")
    page = make_status_page(cast, [site, db])
    old_sections = set(Section.objects.values_list("pk", flat=True))
    sections = [
        {"name": "Storage", "endpoints": [str(queue.pk), str(db.pk)]},
        {"name": "Front", "endpoints": [str(site.pk)]},
        {"name": "Later", "endpoints": []},
    ]

    response = api.as_user(cast.owner).patch(f"{URL}/{page.pk}", {"sections": sections})

    assert response.status_code == 200, response.content
    assert response.json()["sections"] == sections
    assert api.get(f"{URL}/{page.pk}").json()["sections"] == sections
    assert not old_sections & set(Section.objects.values_list("pk", flat=True))
    assert [s.name for s in Section.objects.filter(page=page).order_by("position")] == [
        "Storage",
        "Front",
        "Later",
    ]
    storage = Section.objects.get(name="Storage")
    assert [c.endpoint for c in storage.components.order_by("position")] == [queue, db]


def test_patch_without_sections_keeps_them(api, cast, site, make_status_page):
    page = make_status_page(cast, [site])

    api.as_user(cast.owner).patch(f"{URL}/{page.pk}", {"name": "Renamed"})

    assert Component.objects.get().endpoint == site


def test_patch_with_empty_sections_removes_them(api, cast, site, make_status_page):
    page = make_status_page(cast, [site])

    response = api.as_user(cast.owner).patch(f"{URL}/{page.pk}", {"sections": []})

    assert response.json()["sections"] == []
    assert not Section.objects.exists()
    assert not Component.objects.exists()


def test_a_password_page_keeps_its_password_until_it_stops_being_one(api, cast, make_status_page):
    page = make_status_page(cast, visibility="password", password=PASSWORD)
    api.as_user(cast.owner)

    kept = api.patch(f"{URL}/{page.pk}", {"name": "Renamed"})
    page.refresh_from_db()
    assert kept.status_code == 200, kept.content
    assert check_password(PASSWORD, page.password_hash)

    assert api.patch(f"{URL}/{page.pk}", {"visibility": "public"}).status_code == 200
    page.refresh_from_db()
    assert page.password_hash == ""
    again = api.patch(f"{URL}/{page.pk}", {"visibility": "password"})
    assert_problem(again, 400, "validation_error")
    assert again.json()["errors"] == {"password": [validation.PASSWORD_NEEDED]}


def test_delete(api, cast, site, make_status_page):
    page = make_status_page(cast, [site])

    response = api.as_user(cast.admin).delete(f"{URL}/{page.pk}")

    assert response.status_code == 204
    assert not StatusPage.objects.exists()
    assert not Component.objects.exists()
    site.refresh_from_db()  # the endpoint stays
    event = AuditEvent.objects.get(action="status_page.deleted")
    assert event.details == {"slug": "acme"}


# --- Credentials, roles and scopes ------------------------------------------------------------


def test_no_credential_is_a_401(api, cast, make_status_page):
    page = make_status_page(cast)
    for method, path in [
        ("get", URL),
        ("post", URL),
        ("get", f"{URL}/{page.pk}"),
        ("patch", f"{URL}/{page.pk}"),
        ("delete", f"{URL}/{page.pk}"),
    ]:
        assert_problem(getattr(api, method)(path, {}), 401, "not_authenticated")
    assert StatusPage.objects.count() == 1


def test_members_read_but_cannot_write(api, cast, make_status_page):
    page = make_status_page(cast)
    api.as_user(cast.member)

    assert api.get(URL).json()["count"] == 1
    assert api.get(f"{URL}/{page.pk}").status_code == 200
    for response in [
        api.post(URL, body(slug="mine")),
        api.patch(f"{URL}/{page.pk}", {"name": "Mine"}),
        api.delete(f"{URL}/{page.pk}"),
    ]:
        assert_problem(response, 403, "permission_denied")
    assert list(StatusPage.objects.values_list("name", flat=True)) == ["Acme status"]


def test_members_read_only_the_endpoints_of_their_projects(
    api, cast, make_endpoint, site, make_status_page
):
    from accounts.models import Project

    hidden = Project.objects.create(organization=cast.org, name="Payments")
    billing = make_endpoint(hidden, name="Billing")
    page = make_status_page(cast, [billing, site])

    member_view = api.as_user(cast.member).get(f"{URL}/{page.pk}").json()
    owner_view = api.as_user(cast.owner).get(f"{URL}/{page.pk}").json()

    assert member_view["sections"][0]["endpoints"] == [str(site.pk)]
    assert owner_view["sections"][0]["endpoints"] == [str(billing.pk), str(site.pk)]


@pytest.mark.parametrize("scope", ["endpoint:read", "endpoint:create", "incident:read"])
def test_keys_need_the_admin_scope_to_write(api, cast, make_key, scope, make_status_page):
    page = make_status_page(cast)
    api.with_key(make_key(cast.owner, scope))

    for response in [
        api.post(URL, body(slug="keyed")),
        api.patch(f"{URL}/{page.pk}", {"name": "Keyed"}),
        api.delete(f"{URL}/{page.pk}"),
    ]:
        assert_problem(response, 403, "insufficient_scope")
    assert list(StatusPage.objects.values_list("name", flat=True)) == ["Acme status"]


@pytest.mark.parametrize("scope", ["endpoint:create", "incident:read", "analytics:read"])
def test_keys_need_endpoint_read_to_read(api, cast, make_key, scope, make_status_page):
    page = make_status_page(cast)
    api.with_key(make_key(cast.owner, scope))

    assert_problem(api.get(URL), 403, "insufficient_scope")
    assert_problem(api.get(f"{URL}/{page.pk}"), 403, "insufficient_scope")
    api.with_key(make_key(cast.owner, "endpoint:read"))
    assert api.get(URL).status_code == 200
    assert api.get(f"{URL}/{page.pk}").status_code == 200


def test_an_admin_key_reads_and_writes(api, cast, make_key):
    api.with_key(make_key(cast.owner, "admin"))

    created = api.post(URL, body())
    pk = created.json()["id"]

    assert created.status_code == 201
    assert api.get(URL).status_code == 200
    assert api.patch(f"{URL}/{pk}", {"name": "Keyed"}).status_code == 200
    assert api.delete(f"{URL}/{pk}").status_code == 204


def test_an_admin_key_of_a_member_cannot_write(api, cast, make_key):
    api.with_key(make_key(cast.member, "admin"))

    assert_problem(api.post(URL, body()), 403, "permission_denied")


def test_another_organizations_page_is_a_404_and_stays_as_it_is(api, cast, make_status_page):
    page = make_status_page(cast)
    before = list(StatusPage.objects.values())
    api.as_user(cast.outsider)

    for method, data in [("get", None), ("patch", {"name": "Taken"}), ("delete", None)]:
        foreign = getattr(api, method)(f"{URL}/{page.pk}", data)
        missing = getattr(api, method)(f"{URL}/{uuid.uuid4()}", data)
        assert_problem(foreign, 404, "not_found")
        assert foreign.content == missing.content
    assert api.get(URL).json()["count"] == 0
    assert list(StatusPage.objects.values()) == before


# --- Bad input ----------------------------------------------------------------------------------


def test_every_bad_field_is_named_at_once(api, cast, make_endpoint, site, make_status_page):
    make_status_page(
        cast, slug="taken", custom_domain="status.globex.example", organization=cast.other_org
    )
    foreign = make_endpoint(cast.other_project, name="Theirs")
    api.as_user(cast.owner)

    response = api.post(
        URL,
        {
            "name": "",
            "slug": "taken",
            "visibility": "password",
            "custom_domain": "status.globex.example",
            "uptime_days": 400,
            "show_response_times": "yes",
            "sections": [
                {"name": "Core", "endpoints": [str(site.pk), str(foreign.pk)]},
                {"name": "", "endpoints": [str(site.pk), "nope"]},
            ],
        },
    )

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert set(errors) == {
        "name",
        "slug",
        "password",
        "custom_domain",
        "uptime_days",
        "show_response_times",
        "sections[0].endpoints",
        "sections[1].name",
        "sections[1].endpoints",
    }
    assert errors["slug"] == [validation.SLUG_TAKEN]
    assert errors["custom_domain"] == [validation.DOMAIN_TAKEN]
    assert "Globex" not in response.content.decode()
    assert errors["password"] == [validation.PASSWORD_NEEDED]
    assert errors["uptime_days"] == [validation.UPTIME_RANGE]
    assert errors["sections[0].endpoints"] == [f"Unknown endpoint: {foreign.pk}."]
    assert not StatusPage.objects.filter(organization=cast.org).exists()


def test_foreign_and_duplicate_endpoints_are_named_by_section(api, cast, make_endpoint, site):
    foreign = make_endpoint(cast.other_project, name="Theirs")
    api.as_user(cast.owner)
    sections = [
        {"name": "One", "endpoints": [str(site.pk)]},
        {"name": "Two", "endpoints": [str(foreign.pk), str(site.pk)]},
    ]

    errors = assert_problem(api.post(URL, body(sections=sections)), 400, "validation_error")[
        "errors"
    ]

    assert errors == {
        "sections[1].endpoints": [
            f"Unknown endpoint: {foreign.pk}.",
            validation.TWICE.format(pk=site.pk),
        ]
    }


def test_an_endpoint_twice_in_one_section_is_refused(api, cast, site):
    sections = [{"name": "One", "endpoints": [str(site.pk), str(site.pk)]}]

    response = api.as_user(cast.owner).post(URL, body(sections=sections))

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert errors == {"sections[0].endpoints": [validation.TWICE.format(pk=site.pk)]}


@pytest.mark.parametrize(
    "slug",
    ["ab", "a" * 64, "Acme", "acme page", "acme_page", "acmé", "acme/x", ""],
)
def test_bad_slugs(api, cast, slug):
    response = api.as_user(cast.owner).post(URL, body(slug=slug))

    assert "slug" in assert_problem(response, 400, "validation_error")["errors"]


@pytest.mark.parametrize("slug", ["abc", "a" * 63, "status-2", "123"])
def test_good_slugs(api, cast, slug):
    assert api.as_user(cast.owner).post(URL, body(slug=slug)).status_code == 201


def test_a_slug_is_unique_across_organizations_and_a_page_keeps_its_own(
    api, cast, make_status_page
):
    mine = make_status_page(cast)
    api.as_user(cast.outsider)

    taken = api.post(URL, body())
    assert assert_problem(taken, 400, "validation_error")["errors"] == {
        "slug": [validation.SLUG_TAKEN]
    }
    kept = api.as_user(cast.owner).patch(f"{URL}/{mine.pk}", {"slug": "acme", "name": "Same"})
    assert kept.status_code == 200, kept.content


@pytest.mark.parametrize(
    "domain",
    [
        "localhost",
        "status",
        "https://status.acme.example",
        "status.acme.example:8443",
        "status.acme.example/path",
        "192.0.2.10",
        "[2001:db8::1]",
        "-bad.example.com",
        "under_score.example.com",
        "a" * 64 + ".example.com",
        "healthmon.test",
    ],
)
def test_bad_custom_domains(api, cast, domain):
    response = api.as_user(cast.owner).post(URL, body(custom_domain=domain))

    assert list(assert_problem(response, 400, "validation_error")["errors"]) == ["custom_domain"]


def test_the_apps_own_hosts_are_refused(api, cast, settings):
    settings.ALLOWED_HOSTS = ["app.example.net", ".healthmon.example", "*"]
    api.as_user(cast.owner)

    for domain in ["app.example.net", "healthmon.example", "eu.healthmon.example"]:
        errors = assert_problem(api.post(URL, body(custom_domain=domain)), 400, "validation_error")[
            "errors"
        ]
        assert errors == {"custom_domain": [validation.OWN_DOMAIN]}
    assert api.post(URL, body(custom_domain="status.acme.example")).status_code == 201


def test_a_blank_or_null_custom_domain_is_none(api, cast, make_status_page):
    page = make_status_page(cast, custom_domain="status.acme.example")
    api.as_user(cast.owner)

    for value in ["", None]:
        response = api.patch(f"{URL}/{page.pk}", {"custom_domain": value})
        assert response.json()["custom_domain"] is None
        api.patch(f"{URL}/{page.pk}", {"custom_domain": "status.acme.example"})


@pytest.mark.parametrize("days", [29, 366, 0, -1])
def test_uptime_days_out_of_range(api, cast, days):
    response = api.as_user(cast.owner).post(URL, body(uptime_days=days))

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert errors == {"uptime_days": [validation.UPTIME_RANGE]}


@pytest.mark.parametrize("days", [30, 365])
def test_uptime_days_bounds(api, cast, days):
    response = api.as_user(cast.owner).post(URL, body(uptime_days=days))

    assert response.json()["uptime_days"] == days


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"visibility": "password"}, validation.PASSWORD_NEEDED),
        ({"visibility": "password", "password": "short"}, validation.PASSWORD_LENGTH),
        ({"visibility": "public", "password": PASSWORD}, validation.PASSWORD_UNUSED),
    ],
)
def test_password_rules(api, cast, fields, error):
    response = api.as_user(cast.owner).post(URL, body(**fields))

    assert assert_problem(response, 400, "validation_error")["errors"] == {"password": [error]}


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ("Core", "sections"),
        ([["Core"]], "sections[0]"),
        ([{"name": "Core", "endpoints": "x"}], "sections[0].endpoints"),
        ([{"name": "Core", "colour": "red"}], "sections[0].colour"),
        ([{"name": " ", "endpoints": []}], "sections[0].name"),
        ([{"name": "x" * 201, "endpoints": []}], "sections[0].name"),
        ([{"name": "Core\nlines", "endpoints": []}], "sections[0].name"),
        ([{"name": 7, "endpoints": []}], "sections[0].name"),
    ],
)
def test_malformed_sections(api, cast, sections, field):
    response = api.as_user(cast.owner).post(URL, body(sections=sections))

    assert field in assert_problem(response, 400, "validation_error")["errors"]


def test_a_section_without_endpoints_has_none(api, cast):
    response = api.as_user(cast.owner).post(URL, body(sections=[{"name": "Soon"}]))

    assert response.json()["sections"] == [{"name": "Soon", "endpoints": []}]


def test_a_page_without_name_or_slug(api, cast):
    response = api.as_user(cast.owner).post(URL, {})

    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"name", "slug"}


def test_a_slug_or_domain_taken_meanwhile_is_refused_as_the_check_refuses_it(
    cast, make_status_page
):
    """Two requests checked the same free slug: the second save is a 400, never a 500."""
    make_status_page(cast, custom_domain="status.acme.example")

    with pytest.raises(InvalidInput) as refused:
        make_status_page(cast, slug="acme", custom_domain="status.acme.example")

    assert refused.value.errors == {
        "slug": [validation.SLUG_TAKEN],
        "custom_domain": [validation.DOMAIN_TAKEN],
    }
    assert StatusPage.objects.count() == 1


def test_only_the_fields_sent_are_checked(api, cast, make_status_page):
    """A value stored by other means (the admin, an older rule) does not block other changes."""
    page = make_status_page(cast)
    StatusPage.objects.filter(pk=page.pk).update(slug="Old_Slug")

    response = api.as_user(cast.owner).patch(f"{URL}/{page.pk}", {"title": "Kept"})

    assert response.status_code == 200, response.content
    assert response.json()["slug"] == "Old_Slug"
    assert_problem(api.patch(f"{URL}/{page.pk}", {"slug": "Old_Slug"}), 400, "validation_error")


def test_an_edit_shows_on_the_public_page_at_once(api, cast, client, make_status_page):
    page = make_status_page(cast, title="Before")
    assert "Before" in client.get("/status/acme").content.decode()  # cached now

    api.as_user(cast.owner).patch(f"{URL}/{page.pk}", {"title": "After"})

    text = client.get("/status/acme").content.decode()
    assert "After" in text
    assert "Before" not in text


def test_a_new_custom_domain_serves_at_once_and_an_old_one_stops(
    api, cast, client, make_status_page
):
    page = make_status_page(cast)
    assert client.get("/", HTTP_HOST="status.acme.example").status_code == 400  # cached: none
    api.as_user(cast.owner)

    api.patch(f"{URL}/{page.pk}", {"custom_domain": "status.acme.example"})
    assert client.get("/", HTTP_HOST="status.acme.example").status_code == 200

    api.patch(f"{URL}/{page.pk}", {"custom_domain": "status.acme.test"})
    assert client.get("/", HTTP_HOST="status.acme.example").status_code == 400
    assert client.get("/", HTTP_HOST="status.acme.test").status_code == 200

    api.delete(f"{URL}/{page.pk}")
    assert client.get("/", HTTP_HOST="status.acme.test").status_code == 400
