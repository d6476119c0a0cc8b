import jwt
import pytest
from django.conf import settings

from accounts.models import Organization, Project, Role, User
from tests.helpers import PASSWORD, assert_problem

URL = "/api/v1/auth/register"


def body(**overrides):
    return {
        "email": "Founder@Example.test",
        "password": PASSWORD,
        "organization_name": "Initech",
    } | overrides


@pytest.mark.django_db
def test_register_creates_organization_owner_default_project_and_jwt(api):
    response = api.post(URL, body())

    assert response.status_code == 201
    data = response.json()
    assert set(data) == {"token", "expires_at", "user", "organization", "project"}
    user = User.objects.get()
    assert data["user"] == {
        "id": str(user.id),
        "email": "founder@example.test",
        "role": "owner",
        "organization_id": str(user.organization_id),
        "email_verified": False,
        "date_joined": data["user"]["date_joined"],
    }
    assert user.role == Role.OWNER
    assert data["organization"] == {"id": str(user.organization_id), "name": "Initech"}
    project = Project.objects.get()
    assert project.organization_id == user.organization_id
    assert data["project"]["id"] == str(project.id)
    assert data["project"]["name"] == "Default"
    me = api.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {data['token']}")
    assert me.status_code == 200
    assert me.json()["organization"]["name"] == "Initech"


@pytest.mark.django_db
def test_register_token_is_hs256_and_expires_in_seven_days(api):
    data = api.post(URL, body()).json()

    claims = jwt.decode(data["token"], settings.SECRET_KEY, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 7 * 24 * 3600
    assert claims["user_id"] == data["user"]["id"]


@pytest.mark.django_db
def test_register_stores_a_bcrypt_hash_never_the_password(api):
    api.post(URL, body())

    user = User.objects.get()
    assert user.password.startswith("bcrypt_sha256$")
    assert PASSWORD not in user.password
    assert user.check_password(PASSWORD)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"password": "short7c"}, "password"),
        ({"password": "12345678901"}, "password"),
        ({"password": "password123"}, "password"),
        ({"email": "not-an-email"}, "email"),
        ({"email": ""}, "email"),
        ({"email": None}, "email"),
        ({"email": ["a@b.test"]}, "email"),
        ({"email": "x" * 250 + "@e.test"}, "email"),
        ({"organization_name": ""}, "organization_name"),
        ({"organization_name": "   "}, "organization_name"),
        ({"organization_name": "x" * 201}, "organization_name"),
        ({"organization_name": "Evil\r\nBcc: victim@example.test"}, "organization_name"),
        ({"organization_name": "Line\u2028separator"}, "organization_name"),
        ({"email": "\u0130" * 130 + "@example.test"}, "email"),
        ({"organization_name": {"nested": "object"}}, "organization_name"),
        ({"password": None}, "password"),
        ({"password": 12345678}, "password"),
        ({"password": "p" * 1025}, "password"),
    ],
)
def test_register_rejects_bad_input_with_validation_error(api, overrides, field):
    response = api.post(URL, body(**overrides))

    problem = assert_problem(response, 400, "validation_error")
    assert field in problem["errors"]
    assert not User.objects.exists()
    assert not Organization.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("missing", ["email", "password", "organization_name"])
def test_register_requires_every_field(api, missing):
    data = body()
    del data[missing]

    problem = assert_problem(api.post(URL, data), 400, "validation_error")
    assert problem["errors"][missing] == ["This field is required."]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "content_type"),
    [
        ("{not json", "application/json"),
        ("email=a@b.test&password=x", "application/x-www-form-urlencoded"),
        ("just text", "text/plain"),
        ("[1, 2, 3]", "application/json"),
        ('"a string"', "application/json"),
        ('{"email": NaN}', "application/json"),
        ("[" * 5000 + "]" * 5000, "application/json"),
    ],
)
def test_register_rejects_non_json_and_non_object_bodies(api, payload, content_type):
    response = api.generic("POST", URL, payload, content_type=content_type)

    assert_problem(response, 400, "validation_error")
    assert not User.objects.exists()


@pytest.mark.django_db
def test_register_refuses_a_duplicate_email_case_insensitively(api):
    assert api.post(URL, body()).status_code == 201

    response = api.post(URL, body(email="FOUNDER@example.TEST", organization_name="Other"))

    assert_problem(response, 409, "conflict")
    assert Organization.objects.count() == 1


@pytest.mark.django_db
def test_register_ignores_a_stale_authorization_header(api):
    response = api.post(URL, body(), HTTP_AUTHORIZATION="Bearer expired.or.garbage")

    assert response.status_code == 201


@pytest.mark.django_db
def test_register_refuses_oversized_bodies(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = api.post(URL, body(organization_name="x" * 2000))

    assert_problem(response, 413, "payload_too_large")


def test_production_hashes_passwords_with_bcrypt_first():
    from healthmon import settings as production_settings

    first = production_settings.PASSWORD_HASHERS[0]
    assert first == "django.contrib.auth.hashers.BCryptSHA256PasswordHasher"
