"""Status pages over the API: create, read, change (sections replaced in order), delete;
who reads and writes; every bad field named at once; the password never answered."""

import uuid
from typing import Any

import pytest
from django.contrib.auth.hashers import check_password

from accounts.models import AuditEvent
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
    assert page.organization == cast.org
    assert [c.endpoint for c in Component.objects.order_by("position")] == [api_server, site]
    assert AuditEvent.objects.filter(action="status_page.created").count() == 1

