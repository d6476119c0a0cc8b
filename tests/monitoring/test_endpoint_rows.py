"""The endpoint list's rows read without a queryset (`monitoring.selectors.endpoint_rows_visible`)
and the visible projects read with a fixed statement: the same rows, order and tenants as the
ORM's, on SQLite and PostgreSQL."""

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from accounts.models import Project, ProjectAccess
from monitoring.api.serializers import ROW_FIELDS
from monitoring.models import Endpoint, visible_project_ids
from monitoring.selectors import endpoint_rows_visible

URL = "/api/v1/endpoints"


@pytest.fixture
def world(cast, make_endpoint):
    """Endpoints in two projects of Acme (the member sees only the first) and one of Globex,
    with nulls, JSON, timestamps and heartbeats among them."""
    second = Project.objects.create(organization=cast.org, name="Second")
    for n in range(4):
        make_endpoint(cast.project, name=f"web {n}", config={"headers": {"X-Key": "secret"}})
        make_endpoint(second, name=f"db {n}", type="redis", target="redis://:pw@cache:6379/0")
    make_endpoint(cast.project, name="cron", type="heartbeat", target="", interval_seconds=60)
    make_endpoint(cast.other_project, name="foreign")
    Endpoint.objects.filter(name="web 1").update(
        last_checked_at=datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        certificate_expires_at=datetime(2031, 1, 1, tzinfo=UTC),
        locations=["eu-west"],
    )
    return second


@pytest.mark.parametrize("role", ["owner", "admin", "member", "outsider"])
def test_the_visible_projects_are_the_querysets(cast, world, role):
    user = getattr(cast, role)

    ids = visible_project_ids(user)

    assert sorted(ids) == sorted(Project.objects.visible_to(user).values_list("pk", flat=True))
    assert ids
    assert all(type(pk) is type(cast.project.pk) for pk in ids)


def test_a_member_sees_the_projects_granted_and_no_other(cast, world):
    assert visible_project_ids(cast.member) == [cast.project.pk]

    ProjectAccess.objects.create(user=cast.member, project=world)
    assert sorted(visible_project_ids(cast.member)) == sorted([cast.project.pk, world.pk])

    ProjectAccess.objects.filter(user=cast.member).delete()
    assert visible_project_ids(cast.member) == []


@pytest.mark.parametrize("role", ["owner", "member", "outsider"])
@pytest.mark.parametrize(("start", "stop"), [(0, 51), (0, 3), (3, 6), (8, 20), (20, 30)])
def test_the_rows_are_the_orms_rows_in_its_order(cast, world, role, start, stop):
    user = getattr(cast, role)
    expected = Endpoint.objects.visible_to(user).values(*ROW_FIELDS)

    rows = endpoint_rows_visible(user, ROW_FIELDS)

    assert rows[start:stop] == list(expected[start:stop])
    assert rows.count() == expected.count()


def test_a_user_who_sees_no_project_reads_nothing(cast, world, django_assert_num_queries):
    ProjectAccess.objects.filter(user=cast.member).delete()

    with django_assert_num_queries(1):  # the visible projects only
        rows = endpoint_rows_visible(cast.member, ROW_FIELDS)
        assert rows[0:51] == []
        assert rows.count() == 0


def test_the_unfiltered_list_equals_the_filtered_one(api, cast, world):
    """The same endpoints through the rows (no filter) and the queryset (a filter that
    keeps them all)."""
    api.as_user(cast.owner)

    plain = api.get(URL, {"page_size": 4, "page": 2}).json()
    filtered = api.get(URL, {"page_size": 4, "page": 2, "enabled": "true"}).json()

    assert plain["results"] == filtered["results"]
    assert plain["count"] == filtered["count"] == 9
    names = Endpoint.objects.visible_to(cast.owner).values_list("name", flat=True)
    assert [e["name"] for e in plain["results"]] == list(names[4:8])


def test_the_list_never_shows_another_tenants_endpoints(api, cast, world):
    api.as_user(cast.outsider)
    assert [e["name"] for e in api.get(URL).json()["results"]] == ["foreign"]

    api.as_user(cast.member)
    listed = api.get(URL).json()["results"]
    assert {e["project"] for e in listed} == {str(cast.project.pk)}
    assert len(listed) == 5


@pytest.mark.parametrize(
    "value",
    [
        None,
        datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        datetime(2030, 1, 2, 3, 4, 5, 600, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
        datetime(2030, 6, 1, 23, 59, 59, tzinfo=ZoneInfo("Europe/Paris")),
    ],
)
def test_a_listed_time_is_written_as_drf_writes_it(value):
    from rest_framework.fields import DateTimeField

    from healthmon.api.serializers import api_timestamp

    expected = None if value is None else DateTimeField().to_representation(value)
    assert api_timestamp(value) == expected
