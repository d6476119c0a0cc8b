import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from accounts.models import User
from tests.helpers import PASSWORD, assert_problem, log_in, mailed_token

REGISTER = {"email": "new@initech.test", "password": PASSWORD, "organization_name": "Initech"}


@pytest.mark.django_db
def test_off_by_default_no_mail_and_login_works(api, outbox):
    api.post("/api/v1/auth/register", REGISTER)

    assert outbox == []
    assert log_in(api, REGISTER["email"]).status_code == 200


@pytest.mark.django_db
def test_when_on_registration_mails_a_link_and_login_waits_for_it(api, outbox, verification_on):
    assert api.post("/api/v1/auth/register", REGISTER).status_code == 201
    assert_problem(log_in(api, REGISTER["email"]), 403, "email_not_verified")

    response = api.post(
        "/api/v1/auth/verify-email", {"token": mailed_token(outbox[0], "/verify-email")}
    )

    assert response.status_code == 200
    assert User.objects.get().email_verified
    assert log_in(api, REGISTER["email"]).status_code == 200


@pytest.mark.django_db
def test_a_wrong_password_is_still_a_401_for_unverified_accounts(api, verification_on):
    api.post("/api/v1/auth/register", REGISTER)

    response = api.post(
        "/api/v1/auth/login", {"email": REGISTER["email"], "password": "nope-nope-1"}
    )

    assert_problem(response, 401, "invalid_credentials")


@pytest.mark.django_db
def test_verification_links_expire_and_must_be_genuine(api, outbox, verification_on):
    api.post("/api/v1/auth/register", REGISTER)
    token = mailed_token(outbox[0], "/verify-email")

    assert_problem(
        api.post("/api/v1/auth/verify-email", {"token": token + "x"}), 400, "validation_error"
    )
    with time_machine.travel(timezone.now() + timedelta(days=3, seconds=1)):
        expired = api.post("/api/v1/auth/verify-email", {"token": token})
    assert_problem(expired, 400, "validation_error")
    assert not User.objects.get().email_verified


def test_invited_users_are_verified_by_accepting(api, cast, outbox, settings):
    settings.REQUIRE_EMAIL_VERIFICATION = True
    api.as_user(cast.owner)
    api.post("/api/v1/users/invite", {"email": "new@acme.test", "role": "member", "projects": []})
    api.as_user(None)
    token = re.search(r"accept-invite\?token=(\S+)", outbox[0].body).group(1)

    api.post("/api/v1/auth/accept-invite", {"token": token, "password": PASSWORD})

    response = api.post("/api/v1/auth/login", {"email": "new@acme.test", "password": PASSWORD})
    assert response.status_code == 200
