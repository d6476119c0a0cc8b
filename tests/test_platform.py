"""The API's shared behaviour: problem+json errors, schema and docs, settings validation."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from drf_spectacular.validation import validate_schema

from tests.helpers import assert_problem


def test_unknown_api_paths_are_problem_json(api, db):
    assert_problem(api.get("/api/v1/does-not-exist"), 404, "not_found")


def test_trailing_slash_variants_are_not_routes(api, db):
    assert_problem(api.get("/api/v1/users/"), 404, "not_found")


def test_wrong_method_is_405_problem(api, db):
    assert_problem(api.get("/api/v1/auth/login"), 405, "method_not_allowed")


def test_garbage_bearer_tokens_are_401_with_one_body(api, cast):
    bodies = set()
    for header in [
        "Bearer abc",
        "Bearer a.b.c",
        "Bearer",
        "Bearer a b",
        "Token abc",
        "Bearer " + "x" * 5000,
    ]:
        response = api.get("/api/v1/projects", HTTP_AUTHORIZATION=header)
        if header.startswith("Token"):
            assert_problem(response, 401, "not_authenticated")
            continue
        bodies.add(response.content)
        assert_problem(response, 401, "invalid_token")
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert len(bodies) == 1


def test_jwt_with_alg_none_or_a_wrong_key_is_refused(api, cast):
    import jwt as pyjwt

    claims = {
        "user_id": str(cast.owner.id),
        "ver": 0,
        "token_type": "access",
        "exp": 4102444800,
        "jti": "x",
    }
    forged = [
        pyjwt.encode(claims, key=None, algorithm="none"),
        pyjwt.encode(claims, "another-key-that-is-long-enough-for-hs256-xx", algorithm="HS256"),
    ]
    for token in forged:
        assert_problem(
            api.get("/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {token}"), 401, "invalid_token"
        )


def test_problem_json_can_be_negotiated(api, db):
    response = api.get("/api/v1/projects", HTTP_ACCEPT="application/problem+json")

    assert_problem(response, 401, "not_authenticated")


def test_schema_is_valid_openapi_and_documents_every_route(api, db):
    response = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)
    paths = schema["paths"]
    for path in [
        "/api/v1/auth/register",
        "/api/v1/auth/login",
        "/api/v1/auth/forgot-password",
        "/api/v1/auth/reset-password",
        "/api/v1/auth/accept-invite",
        "/api/v1/auth/change-password",
        "/api/v1/auth/verify-email",
        "/api/v1/auth/me",
        "/api/v1/users",
        "/api/v1/users/{id}",
        "/api/v1/users/{id}/role",
        "/api/v1/users/invite",
        "/api/v1/invitations",
        "/api/v1/projects",
        "/api/v1/projects/{id}",
        "/api/v1/api-keys",
        "/api/v1/api-keys/{id}",
        "/api/v1/endpoints",
        "/api/v1/endpoints/{id}/checks",
        "/api/v1/endpoints/{id}/check-now",
        "/api/v1/incidents",
        "/api/v1/incidents/{id}",
        "/api/v1/endpoints/{id}",
        "/api/v1/endpoints/{id}/pause",
        "/api/v1/endpoints/{id}/resume",
        "/api/v1/health",
    ]:
        assert path in paths, path
    login = paths["/api/v1/auth/login"]["post"]["responses"]
    assert {"200", "400", "401", "429"} <= set(login)
    assert "application/problem+json" in login["401"]["content"]
    removal = paths["/api/v1/users/{id}"]["delete"]["responses"]
    assert {"204", "400", "401", "403", "404"} <= set(removal)
    endpoints = paths["/api/v1/endpoints"]["get"]
    assert {"project", "type", "status"} <= {p["name"] for p in endpoints["parameters"]}
    assert "`endpoint:read`" in endpoints["description"]
    assert "`admin`" in paths["/api/v1/users"]["get"]["description"]
    assert "key" in schema["components"]["schemas"]["ApiKeyCreated"]["properties"]
    assert "key" not in schema["components"]["schemas"]["ApiKey"]["properties"]
    assert {"bearerAuth", "apiKeyAuth"} <= set(schema["components"]["securitySchemes"])


def test_schema_generates_without_warnings(tmp_path, db):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))

    assert (tmp_path / "s.yaml").read_text().startswith("openapi: 3")


def test_docs_work_offline(client, db):
    response = client.get(reverse("api-docs"))

    page = response.content.decode()
    assert response.status_code == 200
    assert "/static/drf_spectacular_sidecar/" in page
    assert "cdn." not in page
    assert "unpkg" not in page


def _import_settings(**env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SECRET_KEY", "DEBUG"))}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import healthmon.settings"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "false"}, "SECRET_KEY is required"),
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"DEBUG": "true", "JWT_ACCESS_TTL": "7 weeks"}, "JWT_ACCESS_TTL='7 weeks'"),
        ({"DEBUG": "true", "SECRET_KEY": "short"}, "at least 32 characters"),
        ({"DEBUG": "true", "WEB_BASE_URL": "javascript:alert(1)"}, "WEB_BASE_URL"),
        ({"DEBUG": "true", "AUTH_THROTTLE_RATE": "lots"}, "AUTH_THROTTLE_RATE"),
        (
            {"DEBUG": "false", "SECRET_KEY": "s" * 40, "FIELD_ENCRYPTION_KEYS": ""},
            "FIELD_ENCRYPTION_KEYS is required",
        ),
        ({"DEBUG": "true", "FIELD_ENCRYPTION_KEYS": "not-a-key"}, "not a Fernet key"),
        ({"DEBUG": "true", "MIN_CHECK_INTERVAL": "1"}, "MIN_CHECK_INTERVAL"),
        ({"DEBUG": "true", "MIN_CHECK_INTERVAL": "2d"}, "MIN_CHECK_INTERVAL"),
    ],
)
def test_bad_settings_fail_at_start_with_a_clear_message(env, message):
    result = _import_settings(**env)

    assert result.returncode != 0
    assert message in result.stderr


def test_durations_accept_seconds_and_units():
    result = _import_settings(
        DEBUG="true",
        JWT_ACCESS_TTL="12h",
        PASSWORD_RESET_TIMEOUT="1800",
        INVITATION_TTL="2d",
    )

    assert result.returncode == 0, result.stderr


def test_every_setting_is_documented_in_the_readme_and_env_example():
    root = Path(__file__).resolve().parent.parent
    source = "\n".join(
        module.read_text() for module in sorted((root / "healthmon" / "settings").glob("*.py"))
    )
    names = set(
        re.findall(
            r"(?:env\.\w+|_duration|_bool|_fernet_keys|_int_between|_networks)\(\s*\"([A-Z_]+)\"",
            source,
        )
    )
    readme = (root / "README.md").read_text()
    example = (root / ".env.example").read_text()

    assert len(names) >= 25
    for name in sorted(names):
        assert f"`{name}`" in readme, name
        assert f"{name}=" in example, name


def test_each_test_worker_empties_a_cache_database_of_its_own(worker_id):
    """Every test empties the cache; on a shared Redis database one worker's tests emptied
    another's throttle counters and read-your-writes marks mid-test (CI, 2026-11-27)."""
    from django.conf import settings as live

    from tests.conftest import worker_cache_location

    assert worker_cache_location("redis://127.0.0.1:6379/15", "gw0") == "redis://127.0.0.1:6379/15"
    assert worker_cache_location("redis://127.0.0.1:6379/15", "gw1") == "redis://127.0.0.1:6379/14"
    assert worker_cache_location("redis://127.0.0.1:6379/15", "master") == (
        "redis://127.0.0.1:6379/15"
    )
    assert worker_cache_location("locmemcache://", "gw1") == "locmemcache://"
    configured = os.environ.get("CACHE_URL", "")
    if configured.startswith("redis://"):
        assert live.CACHES["default"]["LOCATION"] == worker_cache_location(configured, worker_id)


def test_the_benchmarks_tuned_server_runs_on_the_readmes_postgresql_settings(monkeypatch):
    """`bench/tuned_server.py` starts PostgreSQL with `README_SETTINGS`: the README's table
    (its 2-core / 24 GB column) and the benchmark's server must not drift apart."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.syspath_prepend(str(root / "bench"))
    from _support import README_SETTINGS, TUNED

    section = (root / "README.md").read_text().split("**PostgreSQL settings**", 1)[1]
    documented = {}
    for row in re.findall(r"^\| (`.+?`) \| (.+?) \|", section, re.MULTILINE):
        names, values = (re.findall(r"`([^`]+)`", cell) for cell in row)
        documented.update(zip(names, values, strict=True))

    assert documented == README_SETTINGS
    assert TUNED.items() <= README_SETTINGS.items()
