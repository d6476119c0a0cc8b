from datetime import UTC, datetime, timedelta

import jwt
import pytest
import time_machine
from django.conf import settings

from tests.helpers import PASSWORD, assert_problem

URL = "/api/v1/auth/login"


def test_login_answers_token_expiry_and_user_summary(api, cast):
    response = api.post(URL, {"email": "Admin@ACME.test", "password": PASSWORD})

    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"token", "expires_at", "user"}
    user = data["user"]
    assert {k: user[k] for k in ("id", "email", "role", "organization_id")} == {
        "id": str(cast.admin.id),
        "email": "admin@acme.test",
        "role": "admin",
        "organization_id": str(cast.org.id),
    }


@time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False)
def test_login_expires_at_is_seven_days_ahead_and_matches_exp(api, cast):
    data = api.post(URL, {"email": "owner@acme.test", "password": PASSWORD}).json()

    assert data["expires_at"] == "2026-03-08T12:00:00Z"
    claims = jwt.decode(data["token"], settings.SECRET_KEY, algorithms=["HS256"])
    assert datetime.fromtimestamp(claims["exp"], UTC) == datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def test_login_token_works_until_it_expires(api, cast):
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        token = api.post(URL, {"email": "owner@acme.test", "password": PASSWORD}).json()["token"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    with time_machine.travel(datetime(2026, 3, 8, 11, 59, 59, tzinfo=UTC), tick=False):
        assert api.get("/api/v1/auth/me", **auth).status_code == 200
    with time_machine.travel(datetime(2026, 3, 8, 12, 0, 1, tzinfo=UTC), tick=False):
        assert_problem(api.get("/api/v1/auth/me", **auth), 401, "invalid_token")


def test_jwt_lifetime_follows_the_setting(api, cast, settings):
    settings.JWT_ACCESS_TTL = timedelta(hours=1)

    data = api.post(URL, {"email": "owner@acme.test", "password": PASSWORD}).json()

    claims = jwt.decode(data["token"], settings.SECRET_KEY, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 3600


def test_wrong_password_and_unknown_email_get_the_same_401(api, cast):
    wrong = api.post(URL, {"email": "owner@acme.test", "password": "wrong-password-1"})
    unknown = api.post(URL, {"email": "nobody@acme.test", "password": "wrong-password-1"})

    assert_problem(wrong, 401, "invalid_credentials")
    assert wrong.json() == unknown.json()
    assert wrong.status_code == unknown.status_code == 401
    assert wrong["WWW-Authenticate"] == unknown["WWW-Authenticate"]


def test_inactive_users_cannot_log_in(api, cast):
    cast.member.is_active = False
    cast.member.save(update_fields=["is_active"])

    assert_problem(
        api.post(URL, {"email": "member@acme.test", "password": PASSWORD}),
        401,
        "invalid_credentials",
    )


@pytest.mark.parametrize(
    "payload",
    [{}, {"email": "owner@acme.test"}, {"password": PASSWORD}, {"email": 5, "password": PASSWORD}],
)
def test_login_rejects_incomplete_input(api, cast, payload):
    assert_problem(api.post(URL, payload), 400, "validation_error")


def test_several_sessions_stay_valid_together(api, cast):
    first = api.post(URL, {"email": "owner@acme.test", "password": PASSWORD}).json()["token"]
    second = api.post(URL, {"email": "owner@acme.test", "password": PASSWORD}).json()["token"]

    assert first != second
    for token in (first, second):
        assert api.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
