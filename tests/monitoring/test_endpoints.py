"""The endpoint resource: CRUD with JWTs and keys, who may write where, filters, schedule."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Project
from monitoring.models import Endpoint
from tests.helpers import assert_problem

URL = "/api/v1/endpoints"
FIELDS = {
    "id",
    "project",
    "name",
    "type",
    "target",
    "interval_seconds",
    "timeout_seconds",
    "locations",
    "config",
    "enabled",
    "failure_threshold",
    "recovery_threshold",
    "sla_target",
    "status",
    "detected_type",
    "slug",
    "ping_url",
    "badges",
    "certificate_expires_at",
    "certificate_issuer",
    "last_checked_at",
    "next_check_at",
    "created_at",
    "updated_at",
}


def body(in_project, **fields):
    return {
        "project": str(in_project.id),
        "name": "Checkout API",
        "type": "http",
        "target": "https://checkout.example.com/health",
        **fields,
    }


def test_create_answers_the_endpoint_and_schedules_its_first_check(api, cast):
    now = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)

    with time_machine.travel(now, tick=False):
        response = api.as_user(cast.owner).post(URL, body(cast.project))

    assert response.status_code == 201
    data = response.json()
    assert set(data) == FIELDS
    assert data["project"] == str(cast.project.id)
    assert data["status"] == "pending"
    assert data["enabled"] is True
    assert data["last_checked_at"] is None
    assert data["next_check_at"] == data["created_at"] == "2030-05-01T08:00:00Z"
    assert (data["interval_seconds"], data["timeout_seconds"]) == (60, 10)
    assert Endpoint.objects.get().next_check_at == now


def test_a_disabled_endpoint_is_created_paused_and_never_due(api, cast):
    api.as_user(cast.owner)

    data = api.post(URL, body(cast.project, enabled=False)).json()

    assert data["status"] == "paused"
    assert data["next_check_at"] is None
    assert not Endpoint.objects.due(datetime.now(UTC) + timedelta(days=1)).exists()


@pytest.mark.parametrize("missing", ["project", "name", "type", "target"])
def test_required_fields(api, cast, missing):
    api.as_user(cast.owner)
    payload = body(cast.project)
    del payload[missing]

    problem = assert_problem(api.post(URL, payload), 400, "validation_error")

    assert missing in problem["errors"]
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("type", "ftp"),
        ("type", None),
        ("name", ""),
        ("name", "a\u2028b"),
        ("name", "x" * 201),
        ("enabled", "maybe"),
        ("interval_seconds", "often"),
        ("interval_seconds", 1.5),
        ("project", "not-a-uuid"),
        ("project", 42),
        ("project", "00000000-0000-0000-0000-000000000000"),
        ("config", "verbose"),
    ],
)
def test_bad_fields_are_400s(api, cast, field, value):
    api.as_user(cast.owner)

    problem = assert_problem(
        api.post(URL, body(cast.project, **{field: value})), 400, "validation_error"
    )

    assert any(key == field or key.startswith(f"{field}.") for key in problem["errors"])
    assert Endpoint.objects.count() == 0


def test_a_bad_target_and_a_bad_config_are_named_in_one_answer(api, cast):
    api.as_user(cast.owner)
    payload = body(
        cast.project, target="ftp://x", interval_seconds=10, config={"method": "BREW", "typo": 1}
    )

    problem = assert_problem(api.post(URL, payload), 400, "validation_error")

    assert set(problem["errors"]) == {"target", "config.method", "config.typo"}
    assert Endpoint.objects.count() == 0


def test_read_fields_cannot_be_written(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    response = api.patch(
        f"{URL}/{endpoint.id}",
        {"status": "up", "last_checked_at": "2030-01-01T00:00:00Z", "id": "x"},
    )

    assert response.status_code == 200
    endpoint.refresh_from_db()
    assert endpoint.status == "pending"
    assert endpoint.last_checked_at is None


def test_read_update_and_delete(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    assert api.get(f"{URL}/{endpoint.id}").json()["name"] == "Website"
    changed = api.patch(f"{URL}/{endpoint.id}", {"name": "Shop", "interval_seconds": 300})
    assert changed.status_code == 200
    assert (changed.json()["name"], changed.json()["interval_seconds"]) == ("Shop", 300)
    assert api.delete(f"{URL}/{endpoint.id}").status_code == 204
    assert not Endpoint.objects.exists()
    assert_problem(api.get(f"{URL}/{endpoint.id}"), 404, "not_found")


def test_put_is_not_offered(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    assert_problem(api.put(f"{URL}/{endpoint.id}", body(cast.project)), 405, "method_not_allowed")


def test_changing_what_is_probed_makes_the_endpoint_due_now(api, cast, make_endpoint):
    start = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        endpoint = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=start + timedelta(minutes=1))

    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        api.as_user(cast.owner)
        renamed = api.patch(f"{URL}/{endpoint.id}", {"name": "Renamed"}).json()
        assert renamed["next_check_at"] == "2030-05-01T08:01:00Z"
        retargeted = api.patch(f"{URL}/{endpoint.id}", {"target": "https://new.example.com/"})

    assert retargeted.json()["next_check_at"] == "2030-05-01T08:00:05Z"
    assert retargeted.json()["target"] == "https://new.example.com/"


def test_pause_and_resume(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    paused = api.post(f"{URL}/{endpoint.id}/pause").json()
    assert (paused["enabled"], paused["status"], paused["next_check_at"]) == (False, "paused", None)
    assert api.post(f"{URL}/{endpoint.id}/pause").json()["status"] == "paused"

    resumed = api.post(f"{URL}/{endpoint.id}/resume").json()
    assert (resumed["enabled"], resumed["status"]) == (True, "pending")
    assert resumed["next_check_at"] is not None


def test_patch_enabled_false_pauses_and_true_resumes(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    assert api.patch(f"{URL}/{endpoint.id}", {"enabled": False}).json()["status"] == "paused"
    Endpoint.objects.filter(pk=endpoint.pk).update(enabled=True, status="up")
    assert api.patch(f"{URL}/{endpoint.id}", {"enabled": True}).json()["status"] == "up"


def test_members_see_and_write_endpoints_only_in_granted_projects(api, cast, make_endpoint):
    hidden = Project.objects.create(organization=cast.org, name="Hidden")
    visible = make_endpoint(cast.project, name="Visible")
    secret = make_endpoint(hidden, name="Secret")
    api.as_user(cast.member)

    assert [e["name"] for e in api.get(URL).json()["results"]] == ["Visible"]
    assert api.post(URL, body(cast.project)).status_code == 201
    assert api.patch(f"{URL}/{visible.id}", {"name": "Mine"}).status_code == 200
    assert_problem(api.get(f"{URL}/{secret.id}"), 404, "not_found")
    assert_problem(api.patch(f"{URL}/{secret.id}", {"name": "x"}), 404, "not_found")
    assert_problem(api.delete(f"{URL}/{secret.id}"), 404, "not_found")
    created = api.post(URL, body(hidden))
    assert "project" in assert_problem(created, 400, "validation_error")["errors"]
    moved = api.patch(f"{URL}/{visible.id}", {"project": str(hidden.id)})
    assert "project" in assert_problem(moved, 400, "validation_error")["errors"]
    assert Endpoint.objects.filter(project=hidden).count() == 1


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_managers_move_endpoints_between_projects(api, cast, make_endpoint, who):
    other = Project.objects.create(organization=cast.org, name="Other")
    endpoint = make_endpoint(cast.project)
    api.as_user(getattr(cast, who))

    response = api.patch(f"{URL}/{endpoint.id}", {"project": str(other.id)})

    assert response.json()["project"] == str(other.id)


def test_crud_with_keys_of_the_right_scopes(api, cast, make_key):
    api.with_key(make_key(cast.member, "endpoint:create"))
    created = api.post(URL, body(cast.project))
    assert created.status_code == 201
    endpoint_id = created.json()["id"]
    assert api.patch(f"{URL}/{endpoint_id}", {"name": "Renamed"}).status_code == 200
    assert_problem(api.get(URL), 403, "insufficient_scope")

    api.with_key(make_key(cast.member, "endpoint:read"))
    assert api.get(f"{URL}/{endpoint_id}").json()["name"] == "Renamed"
    assert_problem(api.post(URL, body(cast.project)), 403, "insufficient_scope")
    assert_problem(api.delete(f"{URL}/{endpoint_id}"), 403, "insufficient_scope")

    api.with_key(make_key(cast.member, "endpoint:create"))
    assert api.delete(f"{URL}/{endpoint_id}").status_code == 204


def test_unauthenticated_requests_are_401(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)

    assert_problem(api.get(URL), 401, "not_authenticated")
    assert_problem(api.post(URL, body(cast.project)), 401, "not_authenticated")
    assert_problem(api.delete(f"{URL}/{endpoint.id}"), 401, "not_authenticated")
    assert Endpoint.objects.count() == 1


def test_filters_by_project_type_status_and_enabled(api, cast, make_endpoint):
    other = Project.objects.create(organization=cast.org, name="Other")
    web = make_endpoint(cast.project, name="web")
    make_endpoint(other, name="cache", type="redis", target="redis://cache.test:6379/0")
    make_endpoint(cast.project, name="db", type="postgresql", target="postgresql://db.test/app")
    Endpoint.objects.filter(pk=web.pk).update(status="down")
    api.as_user(cast.owner)

    def names(**params):
        response = api.get(URL, params)
        assert response.status_code == 200, response.content
        return sorted(e["name"] for e in response.json()["results"])

    assert names(project=str(other.id)) == ["cache"]
    assert names(type="postgresql") == ["db"]
    assert names(status="down") == ["web"]
    assert names(project=str(cast.project.id), status="pending") == ["db"]
    assert names(enabled="true") == ["cache", "db", "web"]


@pytest.mark.parametrize(
    "params",
    [
        {"type": "ftp"},
        {"status": "sleeping"},
        {"project": "nope"},
        {"project": "00000000-0000-0000-0000-000000000000"},
        {"enabled": "perhaps"},
    ],
)
def test_bad_filters_are_400s(api, cast, params):
    api.as_user(cast.owner)

    problem = assert_problem(api.get(URL, params), 400, "validation_error")

    assert set(problem["errors"]) == set(params)


def test_the_list_costs_the_same_queries_for_many_endpoints(
    api, cast, make_endpoint, django_assert_max_num_queries
):
    for n in range(30):
        make_endpoint(cast.project, name=f"service {n}")
    api.as_user(cast.member)

    # user (JWT), the visible projects, count, page
    with django_assert_max_num_queries(4):
        response = api.get(URL)

    assert response.json()["count"] == 30


def test_lists_are_paginated(api, cast, make_endpoint):
    for n in range(5):
        make_endpoint(cast.project, name=f"service {n}")
    api.as_user(cast.owner)

    first = api.get(URL, {"page_size": 2}).json()

    assert first["count"] == 5
    assert [e["name"] for e in first["results"]] == ["service 0", "service 1"]
    assert first["next"]


def test_a_project_with_endpoints_cannot_be_deleted(api, cast, make_endpoint):
    make_endpoint(cast.project)
    api.as_user(cast.owner)

    assert_problem(api.delete(f"/api/v1/projects/{cast.project.id}"), 409, "conflict")

    assert Project.objects.filter(pk=cast.project.pk).exists()
    Endpoint.objects.all().delete()
    assert api.delete(f"/api/v1/projects/{cast.project.id}").status_code == 204


def test_the_direct_representation_equals_drfs_generic_one(cast, make_endpoint):
    from rest_framework import serializers
    from rest_framework.renderers import JSONRenderer

    from monitoring.api.serializers import EndpointSerializer

    with time_machine.travel(datetime(2030, 5, 1, 8, 0, 0, 123456, tzinfo=UTC), tick=False):
        fresh = make_endpoint(cast.project, config={"headers": {"Authorization": "Bearer x"}})
    checked = make_endpoint(cast.project, type="redis", target="redis://:pw@cache.test:6379/0")
    Endpoint.objects.filter(pk=checked.pk).update(
        enabled=False, status="paused", next_check_at=None, last_checked_at=datetime.now(UTC)
    )
    render = JSONRenderer().render

    for endpoint in (Endpoint.objects.get(pk=fresh.pk), Endpoint.objects.get(pk=checked.pk)):
        serializer = EndpointSerializer()
        generic = serializers.ModelSerializer.to_representation(serializer, endpoint)
        assert render(serializer.to_representation(endpoint)) == render(generic)


def test_the_list_shows_each_endpoint_exactly_as_its_own_page_does(api, cast, make_endpoint):
    make_endpoint(cast.project, name="web", config={"headers": {"Authorization": "Bearer x"}})
    checked = make_endpoint(cast.project, name="cache", type="redis", target="redis://:pw@c:6379/0")
    Endpoint.objects.filter(pk=checked.pk).update(
        last_checked_at=datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        certificate_expires_at=datetime(2031, 1, 1, tzinfo=UTC),
        certificate_issuer="CN=Test CA",
        locations=["eu-west"],
    )
    make_endpoint(cast.project, name="cron", type="heartbeat", target="", interval_seconds=60)
    api.as_user(cast.owner)

    listed = api.get(URL).json()["results"]

    assert len(listed) == 3
    assert any(e["ping_url"] for e in listed)
    assert any(e["ping_url"] is None for e in listed)
    for shown in listed:
        assert api.get(f"{URL}/{shown['id']}").json() == shown


def test_a_page_that_is_not_full_is_counted_without_a_count_query(
    api, cast, make_endpoint, django_assert_max_num_queries
):
    for n in range(3):
        make_endpoint(cast.project, name=f"service {n}")
    api.as_user(cast.owner)
    api.get(URL)  # the user's rows are now this process's snapshot

    # the user's state, the visible projects, the page (and the count when it is full)
    with django_assert_max_num_queries(3) as short:
        last = api.get(URL, {"page_size": 2, "page": 2}).json()
    with django_assert_max_num_queries(4) as full:
        first = api.get(URL, {"page_size": 2}).json()

    assert not any("COUNT(" in q["sql"] for q in short.captured_queries)
    assert any("COUNT(" in q["sql"] for q in full.captured_queries)
    assert (last["count"], last["next"], len(last["results"])) == (3, None, 1)
    assert last["previous"]
    assert (first["count"], len(first["results"])) == (3, 2)
    assert first["next"]
    assert first["previous"] is None
    assert api.get(URL, {"page_size": 3}).json()["count"] == 3
    assert_problem(api.get(URL, {"page_size": 2, "page": 3}), 404, "not_found")


def test_an_empty_list_is_one_empty_page(api, cast):
    api.as_user(cast.owner)

    assert api.get(URL).json() == {"count": 0, "next": None, "previous": None, "results": []}
    assert_problem(api.get(URL, {"page": 2}), 404, "not_found")


def test_a_page_number_past_any_offset_is_a_404_not_a_500(api, cast, make_endpoint):
    make_endpoint(cast.project)
    api.as_user(cast.owner)

    # (page - 1) * page_size beyond a 64-bit OFFSET: an error in the database if asked
    for page in ("99999999999999999", "999999999999999999"):
        assert_problem(api.get(URL, {"page_size": 500, "page": page}), 404, "not_found")
