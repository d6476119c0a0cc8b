import pytest

from tests.helpers import PASSWORD, assert_problem

ROUTES = [
    ("/api/v1/auth/login", {"email": "owner@acme.test", "password": "wrong-password-1"}),
    (
        "/api/v1/auth/register",
        {"email": "owner@acme.test", "password": PASSWORD, "organization_name": "X"},
    ),
    ("/api/v1/auth/forgot-password", {"email": "owner@acme.test"}),
    ("/api/v1/auth/reset-password", {"token": "t" * 40, "password": PASSWORD}),
    ("/api/v1/auth/accept-invite", {"token": "t" * 40, "password": PASSWORD}),
]


@pytest.mark.parametrize(("url", "payload"), ROUTES)
def test_auth_routes_answer_429_with_retry_after(api, cast, three_per_minute, url, payload):
    for _ in range(3):
        assert api.post(url, payload).status_code != 429

    response = api.post(url, payload)

    assert_problem(response, 429, "throttled")
    assert 0 < int(response["Retry-After"]) <= 60


def test_the_account_bucket_holds_across_client_addresses(api, cast, three_per_minute):
    payload = {"email": "owner@acme.test", "password": "wrong-password-1"}
    for n in range(3):
        api.post("/api/v1/auth/login", payload, REMOTE_ADDR=f"10.0.0.{n}")

    response = api.post("/api/v1/auth/login", payload, REMOTE_ADDR="10.0.0.99")

    assert_problem(response, 429, "throttled")


def test_the_ip_bucket_holds_across_accounts(api, cast, three_per_minute):
    for n in range(3):
        api.post("/api/v1/auth/login", {"email": f"u{n}@acme.test", "password": "wrong-password-1"})

    response = api.post("/api/v1/auth/login", {"email": "u9@acme.test", "password": "x-password-1"})

    assert_problem(response, 429, "throttled")


def test_a_spoofed_forwarded_for_gains_nothing_without_proxies(api, cast, three_per_minute):
    for n in range(3):
        api.post(
            "/api/v1/auth/forgot-password",
            {"email": f"u{n}@acme.test"},
            HTTP_X_FORWARDED_FOR=f"203.0.113.{n}",
        )

    response = api.post(
        "/api/v1/auth/forgot-password",
        {"email": "u9@acme.test"},
        HTTP_X_FORWARDED_FOR="203.0.113.9",
    )

    assert_problem(response, 429, "throttled")


def test_behind_one_proxy_the_forwarded_client_is_the_key(api, cast, three_per_minute, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for n in range(3):
        api.post(
            "/api/v1/auth/forgot-password",
            {"email": f"u{n}@acme.test"},
            HTTP_X_FORWARDED_FOR="198.51.100.7",
        )

    other_client = api.post(
        "/api/v1/auth/forgot-password",
        {"email": "u9@acme.test"},
        HTTP_X_FORWARDED_FOR="198.51.100.8",
    )
    same_client = api.post(
        "/api/v1/auth/forgot-password",
        {"email": "u8@acme.test"},
        HTTP_X_FORWARDED_FOR="198.51.100.7",
    )

    assert other_client.status_code == 202
    assert_problem(same_client, 429, "throttled")


def test_authenticated_routes_are_not_throttled_by_the_auth_rate(api, cast, three_per_minute):
    api.as_user(cast.owner)

    assert all(api.get("/api/v1/projects").status_code == 200 for _ in range(6))
