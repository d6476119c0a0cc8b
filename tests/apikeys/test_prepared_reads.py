"""On PostgreSQL, what an API request reads on every call about its credential and the
projects it sees goes by statements prepared once per connection (healthmon.db)."""

import pytest
from django.db import connection
from django.utils import timezone

from accounts.authentication import USER_STATE_SQL
from accounts.models import Role, User
from apikeys.authentication import KEY_STATE_SQL
from apikeys.models import ApiKey
from monitoring.models.endpoints import EVERY_PROJECT_SQL, GRANTED_PROJECTS_SQL
from tests.helpers import assert_problem

pytestmark = pytest.mark.postgres("statements prepared on the server")

ENDPOINTS = "/api/v1/endpoints"


def prepared() -> set[str]:
    """The statements this connection holds prepared, with psycopg's placeholders."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {
            statement.replace("$1", "%s").replace("$2", "%s") for (statement,) in cursor.fetchall()
        }


def test_a_key_reads_its_state_and_its_projects_by_prepared_statements(
    api, cast, make_key, make_endpoint
):
    make_endpoint(cast.project)
    key = make_key(cast.owner, "endpoint:read")
    for _ in range(3):
        assert api.with_key(key).get(ENDPOINTS).json()["count"] == 1

    assert {KEY_STATE_SQL, EVERY_PROJECT_SQL} <= prepared()


def test_a_jwt_and_a_member_read_theirs_by_prepared_statements(api, cast, make_key, make_endpoint):
    make_endpoint(cast.project)
    for _ in range(2):
        assert api.as_user(cast.member).get(ENDPOINTS).json()["count"] == 1

    assert {USER_STATE_SQL, GRANTED_PROJECTS_SQL} <= prepared()


def test_a_prepared_state_read_still_sees_a_revocation_and_a_demotion_at_the_next_request(
    api, cast, make_key, make_endpoint
):
    make_endpoint(cast.project)
    admin_key = make_key(cast.admin, "endpoint:read")
    owner_key = make_key(cast.owner, "endpoint:read")
    for _ in range(3):
        assert api.with_key(admin_key).get(ENDPOINTS).json()["count"] == 1
        assert api.with_key(owner_key).get(ENDPOINTS).json()["count"] == 1
    assert KEY_STATE_SQL in prepared()

    User.objects.filter(pk=cast.admin.pk).update(role=Role.MEMBER)  # granted no project
    ApiKey.objects.filter(created_by=cast.owner).update(revoked_at=timezone.now())

    assert api.with_key(admin_key).get(ENDPOINTS).json()["count"] == 0
    assert_problem(api.with_key(owner_key).get(ENDPOINTS), 401, "invalid_token")
