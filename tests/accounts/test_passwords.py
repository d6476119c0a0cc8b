from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail

from accounts.models import User
from tests.helpers import PASSWORD, assert_problem, log_in, mailed_token

NEW_PASSWORD = "a-brand-new-passphrase-7"


def me(api, token):
    return api.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}")


def request_reset(api, email):
    return api.post("/api/v1/auth/forgot-password", {"email": email})


def test_forgot_password_answers_202_with_identical_bodies_for_known_and_unknown(api, cast, outbox):
    known = request_reset(api, "member@acme.test")
    unknown = request_reset(api, "nobody@acme.test")

    assert known.status_code == unknown.status_code == 202
    assert known.json() == unknown.json()
    assert len(outbox) == 1
    assert outbox[0].to == ["member@acme.test"]


def test_reset_mail_has_text_and_html_with_a_web_link(api, cast, outbox):
    request_reset(api, "Member@Acme.test")

    message = outbox[0]
    token = mailed_token(message, "/reset-password")
    html = message.alternatives[0][0]
    assert f"https://healthmon.test/reset-password?token={token}" in html
    assert message.alternatives[0][1] == "text/html"


def test_reset_sets_the_password_and_revokes_every_earlier_jwt(api, cast, outbox):
    sessions = [log_in(api, "member@acme.test").json()["token"] for _ in range(2)]
    request_reset(api, "member@acme.test")

    response = api.post(
        "/api/v1/auth/reset-password",
        {"token": mailed_token(outbox[0], "/reset-password"), "password": NEW_PASSWORD},
    )

    assert response.status_code == 200
    for token in sessions:
        assert_problem(me(api, token), 401, "invalid_token")
    assert_problem(log_in(api, "member@acme.test"), 401, "invalid_credentials")
    fresh = log_in(api, "member@acme.test", NEW_PASSWORD)
    assert fresh.status_code == 200
    assert me(api, fresh.json()["token"]).status_code == 200


def test_reset_token_is_single_use(api, cast, outbox):
    request_reset(api, "member@acme.test")
    token = mailed_token(outbox[0], "/reset-password")
    first = api.post("/api/v1/auth/reset-password", {"token": token, "password": NEW_PASSWORD})

    second = api.post(
        "/api/v1/auth/reset-password", {"token": token, "password": "yet-another-pass-8"}
    )

    assert first.status_code == 200
    assert "token" in assert_problem(second, 400, "validation_error")["errors"]
    assert log_in(api, "member@acme.test", NEW_PASSWORD).status_code == 200


def test_reset_link_works_for_one_hour_and_not_after(api, cast, outbox):
    start = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        request_reset(api, "member@acme.test")
        request_reset(api, "admin@acme.test")
    member_token, admin_token = (
        mailed_token(outbox[0], "/reset-password"),
        mailed_token(outbox[1], "/reset-password"),
    )

    with time_machine.travel(start + timedelta(minutes=59), tick=False):
        ok = api.post(
            "/api/v1/auth/reset-password", {"token": member_token, "password": NEW_PASSWORD}
        )
    with time_machine.travel(start + timedelta(hours=1, seconds=1), tick=False):
        late = api.post(
            "/api/v1/auth/reset-password", {"token": admin_token, "password": NEW_PASSWORD}
        )

    assert ok.status_code == 200
    assert_problem(late, 400, "validation_error")
    assert log_in(api, "admin@acme.test").status_code == 200


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "0" * 32 + "-abc-def", "not-hex-at-all-" * 3, "x" * 513, "💥-💥"],
)
def test_reset_with_a_bad_token_is_a_validation_error(api, cast, token):
    response = api.post("/api/v1/auth/reset-password", {"token": token, "password": NEW_PASSWORD})

    assert_problem(response, 400, "validation_error")


def test_reset_enforces_the_password_rules(api, cast, outbox):
    request_reset(api, "member@acme.test")
    token = mailed_token(outbox[0], "/reset-password")

    response = api.post("/api/v1/auth/reset-password", {"token": token, "password": "short"})

    assert "password" in assert_problem(response, 400, "validation_error")["errors"]
    assert log_in(api, "member@acme.test").status_code == 200


def test_change_password_returns_a_new_token_and_revokes_the_others(api, cast):
    old = log_in(api, "admin@acme.test").json()["token"]
    other = log_in(api, "admin@acme.test").json()["token"]

    response = api.post(
        "/api/v1/auth/change-password",
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        HTTP_AUTHORIZATION=f"Bearer {old}",
    )

    assert response.status_code == 200
    assert set(response.json()) == {"token", "expires_at"}
    assert me(api, response.json()["token"]).status_code == 200
    for token in (old, other):
        assert_problem(me(api, token), 401, "invalid_token")
    assert log_in(api, "admin@acme.test", NEW_PASSWORD).status_code == 200
    assert User.objects.get(pk=cast.admin.pk).password.startswith("bcrypt_sha256$")


def test_change_password_needs_the_current_password(api, cast):
    api.as_user(cast.member)

    response = api.post(
        "/api/v1/auth/change-password",
        {"current_password": "not-my-password", "new_password": NEW_PASSWORD},
    )

    assert "current_password" in assert_problem(response, 400, "validation_error")["errors"]
    assert log_in(api, "member@acme.test").status_code == 200


def test_change_password_enforces_the_password_rules(api, cast):
    api.as_user(cast.member)

    response = api.post(
        "/api/v1/auth/change-password", {"current_password": PASSWORD, "new_password": "1234567"}
    )

    assert "new_password" in assert_problem(response, 400, "validation_error")["errors"]


def test_change_password_requires_authentication(api, cast):
    response = api.post(
        "/api/v1/auth/change-password", {"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    )

    assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_reset_mail_is_not_sent_to_inactive_users(api, cast):
    User.objects.filter(pk=cast.member.pk).update(is_active=False)

    assert request_reset(api, "member@acme.test").status_code == 202
    assert mail.outbox == []


def test_change_password_is_throttled_per_user(api, cast, settings):
    settings.AUTH_THROTTLE_RATE = "3/minute"
    api.as_user(cast.member)
    wrong = {"current_password": "guess-guess-1", "new_password": NEW_PASSWORD}
    for _ in range(3):
        assert api.post("/api/v1/auth/change-password", wrong).status_code == 400

    assert_problem(api.post("/api/v1/auth/change-password", wrong), 429, "throttled")
