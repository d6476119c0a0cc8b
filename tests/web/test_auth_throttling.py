"""The sign-in pages count in the API's throttle buckets: per client IP and per account,
so switching between the page and the API gains an attacker nothing."""

import pytest

from accounts.models import User
from tests.helpers import PASSWORD, assert_problem
from tests.web.conftest import visible_text

pytestmark = pytest.mark.usefixtures("three_per_minute")
WRONG = {"email": "owner@acme.test", "password": "wrong-password-1"}
ROUTES = [
    ("/login", WRONG),
    ("/register", {"email": "owner@acme.test", "password": PASSWORD, "organization_name": "X"}),
    ("/forgot-password", {"email": "owner@acme.test"}),
    ("/reset-password", {"token": "t" * 40, "password": PASSWORD}),
    ("/accept-invite", {"token": "t" * 40, "password": PASSWORD}),
]


def assert_throttled(response):
    assert response.status_code == 429, response.status_code
    text = visible_text(response)
    assert "Too many attempts. Try again in" in text
    seconds = int(text.split("Try again in ", 1)[1].split(" ", 1)[0])
    assert 0 < seconds <= 61


@pytest.mark.parametrize(("url", "payload"), ROUTES)
def test_the_fourth_post_of_a_minute_is_refused_with_a_message(pages, cast, url, payload):
    for _ in range(3):
        assert pages.post(url, payload).status_code != 429

    assert_throttled(pages.post(url, payload))


def test_a_throttled_login_does_not_sign_in_even_with_the_right_password(pages, cast):
    for _ in range(3):
        pages.post("/login", WRONG)

    response = pages.post("/login", {"email": "owner@acme.test", "password": PASSWORD})

    assert_throttled(response)
    assert pages.get("/").status_code == 302


def test_a_throttled_register_creates_nothing(pages, db):
    for n in range(3):
        pages.post(
            "/register", {"email": f"u{n}@x.test", "password": "x", "organization_name": "X"}
        )

    response = pages.post(
        "/register", {"email": "ok@x.test", "password": PASSWORD, "organization_name": "X"}
    )

    assert_throttled(response)
    assert not User.objects.exists()


def test_page_and_api_share_the_ip_bucket(pages, api, cast):
    for _ in range(2):
        assert api.post("/api/v1/auth/login", WRONG).status_code == 401
    assert pages.post("/login", WRONG).status_code == 401

    assert_throttled(pages.post("/login", WRONG))
    assert_problem(api.post("/api/v1/auth/login", WRONG), 429, "throttled")


def test_api_attempts_after_page_attempts_are_refused(pages, api, cast):
    for _ in range(3):
        pages.post("/login", WRONG)

    assert_problem(api.post("/api/v1/auth/login", WRONG), 429, "throttled")


def test_page_and_api_share_the_account_bucket_across_addresses(pages, api, cast):
    api.post("/api/v1/auth/login", WRONG, REMOTE_ADDR="10.0.0.1")
    api.post("/api/v1/auth/login", {**WRONG, "email": "OWNER@acme.test"}, REMOTE_ADDR="10.0.0.2")
    pages.post("/login", WRONG, REMOTE_ADDR="10.0.0.3")

    refused = pages.post("/login", WRONG, REMOTE_ADDR="10.0.0.4")
    other_account = pages.post(
        "/login", {**WRONG, "email": "admin@acme.test"}, REMOTE_ADDR="10.0.0.5"
    )

    assert_throttled(refused)
    assert other_account.status_code == 401


def test_the_ip_bucket_holds_across_accounts(pages, cast):
    for n in range(3):
        pages.post("/login", {"email": f"u{n}@acme.test", "password": "wrong-password-1"})

    assert_throttled(pages.post("/login", {"email": "u9@acme.test", "password": "x-pass-1"}))
    assert pages.post("/login", WRONG, REMOTE_ADDR="10.9.9.9").status_code == 401


def test_the_buckets_are_per_route(pages, cast):
    for _ in range(3):
        pages.post("/login", WRONG)

    assert pages.post("/forgot-password", {"email": "owner@acme.test"}).status_code == 200


def test_a_spoofed_forwarded_for_gains_nothing(pages, cast):
    for n in range(3):
        pages.post("/login", WRONG, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")

    assert_throttled(pages.post("/login", WRONG, HTTP_X_FORWARDED_FOR="203.0.113.9"))


def test_change_password_is_throttled(pages, cast):
    pages.as_user(cast.member)
    wrong = {"current_password": "guess-guess-1", "new_password": "a-brand-new-passphrase-7"}
    for _ in range(3):
        assert pages.post("/account", wrong).status_code == 400

    assert_throttled(pages.post("/account", wrong))


def test_change_password_is_throttled_per_user_across_addresses(pages, make_pages, cast):
    wrong = {"current_password": "guess-guess-1", "new_password": "a-brand-new-passphrase-7"}
    for n in range(3):
        browser = make_pages().as_user(cast.member)
        assert browser.post("/account", wrong, REMOTE_ADDR=f"10.0.1.{n}").status_code == 400

    refused = pages.as_user(cast.member).post("/account", wrong, REMOTE_ADDR="10.0.1.99")
    other_user = pages.as_user(cast.admin).post("/account", wrong, REMOTE_ADDR="10.0.2.1")

    assert_throttled(refused)
    assert other_user.status_code == 400


def test_change_password_shares_the_per_user_bucket_with_the_api(pages, api, cast):
    wrong = {"current_password": "guess-guess-1", "new_password": "a-brand-new-passphrase-7"}
    api.as_user(cast.member)
    for n in range(2):
        api.post("/api/v1/auth/change-password", wrong, REMOTE_ADDR=f"10.0.3.{n}")
    pages.as_user(cast.member).post("/account", wrong, REMOTE_ADDR="10.0.3.50")

    assert_throttled(pages.post("/account", wrong, REMOTE_ADDR="10.0.3.51"))
    assert_problem(api.post("/api/v1/auth/change-password", wrong), 429, "throttled")
