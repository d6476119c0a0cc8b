"""Production settings: Django's deployment check is clean, plain HTTP is sent to HTTPS, and
no stack trace or internal detail ever reaches a client with DEBUG off."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.test import Client

from tests.helpers import assert_problem

ROOT = Path(__file__).resolve().parents[1]
LEAK = "internal-detail-7f3a"


def test_the_deployment_check_prints_no_warning_with_production_settings(tmp_path):
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SECRET_KEY", "DEBUG", "SECURE_", "ALLOWED_HOSTS"))
    }
    environment.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        FIELD_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="healthmon.example.com",
    )

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.fixture
def production(settings):
    settings.SECURE_SSL_REDIRECT = True
    return Client()


def test_plain_http_is_redirected_to_https_except_the_health_check(production, db):
    page = production.get("/login")
    api = production.get("/api/v1/auth/me")
    health = production.get("/api/v1/health")
    secure = production.get("/login", secure=True)

    assert (page.status_code, page["Location"]) == (301, "https://testserver/login")
    assert (api.status_code, api["Location"]) == (301, "https://testserver/api/v1/auth/me")
    assert health.status_code == 200
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


@pytest.fixture
def broken(monkeypatch):
    """A failure deep inside the page and API code, with an internal detail in its message."""

    def fail(*args, **kwargs):
        raise RuntimeError(f"{LEAK} at /srv/healthmon/secret.py line 1")

    monkeypatch.setattr("analytics.dashboards.overview", fail)
    monkeypatch.setattr("accounts.selectors.user_list", fail)


def assert_no_leak(response):
    body = response.content.decode()
    for leak in (LEAK, "Traceback", "RuntimeError", "secret.py", str(ROOT)):
        assert leak not in body, leak


def test_an_unexpected_error_on_a_page_shows_no_trace(cast, broken):
    client = Client(raise_request_exception=False)
    client.force_login(cast.owner)

    response = client.get("/")

    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
    assert_no_leak(response)


def test_an_unexpected_error_in_the_api_is_a_bare_problem(api, cast, broken):
    api.raise_request_exception = False

    response = api.as_user(cast.owner).get("/api/v1/users")

    assert_problem(response, 500, "server_error")
    assert_no_leak(response)
